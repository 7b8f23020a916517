package controller_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/testenv"
)

// fetches returns how many requests to remotes ended with result (success
// or error), from gitsync_fetch_duration_seconds.
func (a *agent) fetches(t *testing.T, result string) uint64 {
	t.Helper()
	return a.samples(t, "gitsync_fetch_duration_seconds", result)
}

// waitFetches waits until n more fetches than now ended with result.
func (a *agent) waitFetches(t *testing.T, result string, n uint64) {
	t.Helper()
	base := a.fetches(t, result)
	eventually(t, "fetches ending "+result, func(context.Context) (bool, error) {
		return a.fetches(t, result) >= base+n, nil
	})
}

// TestConvergedSecretRefSendsNoRequests: a converged GitSync whose source
// needs credentials from a Secret polls its remote at every interval and
// sends no API request while doing so: the Secret is read from a watch.
//
// Checked: with sourceAuth reading through the API reader again, each poll
// sends a GET of the Secret and the test fails naming them.
func TestConvergedSecretRefSendsNoRequests(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	r := newRepo(t)
	h := newGitHost(t, r, "s3cret")
	createAuthSecret(t, c, ns, "s3cret")
	commit := r.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
	gs := newGitSync(ns, "app", h.url, func(g *v1.GitSync) {
		g.Spec.Source.SecretRef = &v1.LocalObjectReference{Name: "git-auth"}
		g.Spec.Interval = metav1.Duration{Duration: time.Second}
	})
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, commit)
	})
	a.settle(t, c, key, 1)
	a.waitFetches(t, "success", 2)

	reads, writes, seen := a.count.reads.Load(), a.count.writes.Load(), len(a.count.requests())
	a.waitFetches(t, "success", 3)
	if r, w := a.count.reads.Load()-reads, a.count.writes.Load()-writes; r != 0 || w != 0 {
		t.Errorf("3 polls of a converged GitSync sent %d reads and %d writes, want none: %v", r, w, a.count.requests()[seen:])
	}
}

// TestSecretChangeRequeues: credentials fixed in the Secret are used at
// once. The remote's password changes, a sync fails on it and the GitSync
// stalls with its interval an hour away; writing the new password into the
// Secret makes it Ready again, which only the Secret's watch can explain.
// The failed fetch is counted under its reason.
//
// Checked: with the watch's event handler not requeueing, the GitSync stays
// Stalled and the test fails waiting for Ready.
func TestSecretChangeRequeues(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	r := newRepo(t)
	h := newGitHost(t, r, "s3cret")
	secret := createAuthSecret(t, c, ns, "s3cret")
	first := r.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
	gs := newGitSync(ns, "app", h.url, func(g *v1.GitSync) {
		g.Spec.Source.SecretRef = &v1.LocalObjectReference{Name: "git-auth"}
		g.Spec.RetryInterval = &metav1.Duration{Duration: time.Hour}
	})
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, first)
	})

	h.SetPassword("n3w")
	second := r.commit(map[string]string{"deploy/b.yaml": configMap("b", "1")})
	request(t, c, key, "after-rotation")
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionFalse, nil)
	if n := a.fetchErrors(t, key); n == 0 {
		t.Errorf("no gitsync_fetch_errors_total for the refused fetch")
	}

	patch := client.MergeFrom(secret.DeepCopy())
	secret.Data["password"] = []byte("n3w")
	if err := c.Patch(context.Background(), secret, patch); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, second)
	})
}

func createAuthSecret(t *testing.T, c client.Client, ns, password string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "git-auth", Namespace: ns},
		Data:       map[string][]byte{"username": []byte("git"), "password": []byte(password)},
	}
	if err := c.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

// fetchErrors sums gitsync_fetch_errors_total of key over reasons.
func (a *agent) fetchErrors(t *testing.T, key client.ObjectKey) float64 {
	t.Helper()
	mfs, err := a.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "gitsync_fetch_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := labelsOf(m.GetLabel())
			if l["namespace"] == key.Namespace && l["name"] == key.Name {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestSecretWatchRefusedReadsWithGet: an agent allowed only to get Secrets
// (an older chart's RBAC) still syncs a GitSync with a secretRef: the
// refused list gives the watch up and the Secret is read with a GET.
//
// Checked: with failed() not giving the watch up on a refusal, the read
// waits for a watch that never syncs and the GitSync never becomes Ready.
func TestSecretWatchRefusedReadsWithGet(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	proxy := env.NewFaultProxy(t)
	refused := proxy.MustInject(t, testenv.Fault{Method: http.MethodGet, Path: "^/api/v1/namespaces/" + ns + "/secrets$", Status: http.StatusForbidden})
	startAgent(t, agentOptions{namespace: ns, config: proxy.Config})
	r := newRepo(t)
	h := newGitHost(t, r, "s3cret")
	createAuthSecret(t, c, ns, "s3cret")
	commit := r.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
	gs := newGitSync(ns, "app", h.url, func(g *v1.GitSync) {
		g.Spec.Source.SecretRef = &v1.LocalObjectReference{Name: "git-auth"}
	})
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, client.ObjectKeyFromObject(gs), v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, commit)
	})
	if refused.Matched() == 0 {
		t.Errorf("the Secret watch never tried to list")
	}
}
