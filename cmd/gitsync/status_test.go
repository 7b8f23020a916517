package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
)

var installGitSyncCRD sync.Once

// statusClient installs the GitSync CRD (once) and returns a client that
// knows the GitSync types.
func statusClient(t *testing.T) client.Client {
	t.Helper()
	ctx := context.Background()
	installGitSyncCRD.Do(func() {
		crd, err := gitsyncv1.CRD()
		if err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("GitSync CRD not established: %v", err)
		}
	})
	c, err := client.New(env.Config, client.Options{Scheme: cliScheme()})
	if err != nil {
		t.Fatal(err)
	}
	// Discovery lags behind Established; this client maps GitSync through it.
	gk := gitsyncv1.GroupVersion.WithKind("GitSync").GroupKind()
	if err := apply.WaitServed(ctx, c.RESTMapper(), gk, time.Minute, gitsyncv1.GroupVersion.Version); err != nil {
		t.Fatal(err)
	}
	return c
}

// createGitSync creates a GitSync and sets its status.
func createGitSync(t *testing.T, c client.Client, ns, name string, status gitsyncv1.GitSyncStatus) {
	t.Helper()
	ctx := context.Background()
	gs := &gitsyncv1.GitSync{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       gitsyncv1.GitSyncSpec{Source: gitsyncv1.GitSource{URL: "https://example.com/" + name, Ref: gitsyncv1.GitRef{Branch: "main"}}},
	}
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	gs.Status = status
	if err := c.Status().Update(ctx, gs); err != nil {
		t.Fatal(err)
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	c := statusClient(t)
	ns, other := env.Namespace(t), env.Namespace(t)
	commit := strings.Repeat("0123456789", 4)
	// Ready since an hour, the last revision applied five minutes ago: the
	// column shows the latter.
	applied := metav1.NewTime(time.Now().Add(-5 * time.Minute))
	createGitSync(t, c, ns, "web", gitsyncv1.GitSyncStatus{
		LastAppliedRevision: "main@sha1:" + commit,
		LastAppliedTime:     &applied,
		History: []gitsyncv1.HistoryEntry{
			{Revision: "main@sha1:" + commit, Digest: "sha256:" + commit + commit[:24], Time: applied,
				Duration: metav1.Duration{Duration: 1500 * time.Millisecond}, Outcome: gitsyncv1.HistorySucceeded},
			{Revision: "v1@sha256:" + commit + commit[:24], Time: applied, Outcome: gitsyncv1.ReasonRenderFailed},
		},
		Conditions: []metav1.Condition{{
			Type: gitsyncv1.ConditionReady, Status: metav1.ConditionTrue, Reason: gitsyncv1.ReasonSucceeded,
			Message: "Applied revision main@sha1:0123456789ab", LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour)),
		}},
	})
	createGitSync(t, c, ns, "api", gitsyncv1.GitSyncStatus{})
	createGitSync(t, c, ns, "cfg", gitsyncv1.GitSyncStatus{
		LastAppliedRevision: "main@sha1:" + commit,
		LastAppliedSigner:   "ssh:SHA256:k3y",
		Conditions: []metav1.Condition{
			{Type: gitsyncv1.ConditionReady, Status: metav1.ConditionTrue, Reason: gitsyncv1.ReasonSucceeded,
				Message: "Applied revision main@sha1:0123456789ab", LastTransitionTime: metav1.Now()},
			{Type: gitsyncv1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: gitsyncv1.ReasonDriftDetected,
				Message: "ConfigMap/cfg differs at /data/level", LastTransitionTime: metav1.Now()},
		},
	})
	createGitSync(t, c, other, "db", gitsyncv1.GitSyncStatus{
		Conditions: []metav1.Condition{{
			Type: gitsyncv1.ConditionReady, Status: metav1.ConditionFalse, Reason: gitsyncv1.ReasonFetchFailed,
			Message: "repository https://example.com/db list refs:\nref not found", LastTransitionTime: metav1.Now(),
		}},
	})

	r := gitsyncIn(t, ns, "status")
	wantCode(t, r, 0)
	rows := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(rows) != 4 {
		t.Fatalf("want a header and 3 rows:\n%s", r)
	}
	if got := strings.Fields(rows[0]); !cmp.Equal(got, []string{"NAME", "READY", "REVISION", "LAST", "APPLIED", "MESSAGE"}) {
		t.Errorf("header: %q", rows[0])
	}
	if got, want := strings.Fields(rows[1])[:4], []string{"api", "Unknown", "<none>", "<none>"}; !cmp.Equal(got, want) {
		t.Errorf("row api: got %q, want prefix %q", rows[1], want)
	}
	for _, want := range []string{"cfg", "True (drifted)", "ConfigMap/cfg differs at /data/level (signed by ssh:SHA256:k3y)"} {
		if !strings.Contains(rows[2], want) {
			t.Errorf("row cfg lacks %q: %q", want, rows[2])
		}
	}
	for _, want := range []string{"web", "True", "main@sha1:012345678901 ", "5m", "Applied revision main@sha1:0123456789ab"} {
		if !strings.Contains(rows[3], want) {
			t.Errorf("row web lacks %q: %q", want, rows[3])
		}
	}

	r = gitsyncIn(t, ns, "status", "web")
	wantCode(t, r, 0)
	for _, want := range []string{"HISTORY", "main@sha1:012345678901 ", "Succeeded", "1.5s", "sha256:012345678901\n",
		"v1@sha256:012345678901 ", "RenderFailed", "<none>"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status web lacks %q in its history:\n%s", want, r)
		}
	}

	r = gitsyncIn(t, other, "status", "db")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "False") || !strings.Contains(r.stdout, "list refs: ref not found") {
		t.Errorf("status db: want the message on one line:\n%s", r)
	}

	r = gitsyncIn(t, ns, "status", "-A")
	wantCode(t, r, 0)
	if !strings.HasPrefix(r.stdout, "NAMESPACE") {
		t.Errorf("-A: want a NAMESPACE column:\n%s", r)
	}
	for _, want := range []string{ns + " ", other + " "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("-A lacks namespace %s:\n%s", want, r)
		}
	}

	r = gitsyncIn(t, ns, "status", "web", "-o", "json")
	wantCode(t, r, 0)
	var one gitsyncv1.GitSync
	if err := json.Unmarshal([]byte(r.stdout), &one); err != nil || one.Name != "web" || one.Kind != "GitSync" {
		t.Errorf("-o json: %v\n%s", err, r)
	}
	r = gitsyncIn(t, ns, "status", "-o", "yaml")
	wantCode(t, r, 0)
	var list gitsyncv1.GitSyncList
	if err := yaml.Unmarshal([]byte(r.stdout), &list); err != nil || list.Kind != "GitSyncList" || len(list.Items) != 3 {
		t.Errorf("-o yaml: %v\n%s", err, r)
	}

	r = gitsyncIn(t, ns, "status", "missing")
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, `"missing" not found`) {
		t.Errorf("missing GitSync:\n%s", r)
	}
	empty := env.Namespace(t)
	r = gitsyncIn(t, empty, "status")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "No GitSyncs found in "+empty) {
		t.Errorf("empty namespace:\n%s", r)
	}
}
