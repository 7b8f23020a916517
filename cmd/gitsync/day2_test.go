package main

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gitsynctest"
	"gitsync.dev/gitsync/object"
)

// TestReconcileWait: reconcile asks the running agent for a sync now (a new
// commit is applied although the interval is an hour), and --wait returns
// when the agent reports it handled that request, also when nothing changed.
func TestReconcileWait(t *testing.T) {
	ns := env.Namespace(t)
	startRun(t, ns, "--leader-elect=false")
	c := gitsyncClient(t)
	dir := newRunRepo(t)
	commit1 := commitFiles(t, dir, map[string]string{"deploy/a.yaml": configMap("a", "value", "1")})
	gs := gitsynctest.New(ns, "web", "file://"+dir)
	poll(t, "create GitSync (CRD installed by the agent)", func(ctx context.Context) (bool, error) {
		return c.Create(ctx, gs.DeepCopy()) == nil, nil
	})
	waitApplied(t, c, client.ObjectKeyFromObject(gs), commit1)

	commit2 := commitFiles(t, dir, map[string]string{"deploy/a.yaml": configMap("a", "value", "2")})
	r := gitsyncIn(t, ns, "reconcile", "web", "--wait", "--timeout", "90s")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "GitSync/"+ns+"/web ready: main@sha1:"+commit2) {
		t.Errorf("want ready at %s, got:\n%s", commit2, r)
	}
	// Nothing changed: the agent writes no condition, but reports the request.
	r = gitsyncIn(t, ns, "reconcile", "web", "--wait", "--timeout", "90s", "--with-source")
	wantCode(t, r, 0)

	// A suspended GitSync is refused, and resume clears the flag.
	wantCode(t, gitsyncIn(t, ns, "suspend", "web"), 0)
	if !getSpec(t, c, ns, "web").Suspend {
		t.Fatal("suspend did not set spec.suspend")
	}
	r = gitsyncIn(t, ns, "reconcile", "web")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "is suspended: run gitsync resume web -n "+ns) {
		t.Errorf("want the suspended refusal, got:\n%s", r)
	}
	wantCode(t, gitsyncIn(t, ns, "resume", "web"), 0)
	if getSpec(t, c, ns, "web").Suspend {
		t.Fatal("resume did not clear spec.suspend")
	}
}

func getSpec(t *testing.T, c client.Client, ns, name string) gitsyncv1.GitSyncSpec {
	t.Helper()
	gs := &gitsyncv1.GitSync{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, gs); err != nil {
		t.Fatal(err)
	}
	return gs.Spec
}

// TestTree: tree lists the status inventory with kstatus health: an existing
// ConfigMap is Current (whether read by GET or, three of a kind, by LIST), a Deployment nobody rolls out is InProgress, a
// deleted object NotFound.
func TestTree(t *testing.T) {
	t.Parallel()
	c := statusClient(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	one := int32(1)
	for _, obj := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm2"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	entry := func(id object.ID, v string) gitsyncv1.InventoryEntry {
		return gitsyncv1.InventoryEntry{ID: id.Key(), Version: v}
	}
	createGitSync(t, c, ns, "web", gitsyncv1.GitSyncStatus{Inventory: &gitsyncv1.Inventory{Entries: []gitsyncv1.InventoryEntry{
		entry(object.ID{Kind: "ConfigMap", Namespace: ns, Name: "cm"}, "v1"),
		entry(object.ID{Kind: "ConfigMap", Namespace: ns, Name: "cm2"}, "v1"),
		entry(object.ID{Group: "apps", Kind: "Deployment", Namespace: ns, Name: "web"}, "v1"),
		entry(object.ID{Kind: "ConfigMap", Namespace: ns, Name: "gone"}, ""),
	}}})
	r := gitsyncIn(t, ns, "tree", "web")
	wantCode(t, r, 0)
	for _, want := range [][]string{
		{"ConfigMap/" + ns + "/cm", "Current"},
		{"ConfigMap/" + ns + "/cm2", "Current"}, // three ConfigMaps: read with one LIST
		{"Deployment/" + ns + "/web", "InProgress"},
		{"ConfigMap/" + ns + "/gone", "NotFound"},
	} {
		if got := lines(r.stdout, want[0]+" "); len(got) != 1 || !strings.Contains(got[0], want[1]) {
			t.Errorf("want %s %s, got:\n%s", want[0], want[1], r)
		}
	}
}

// TestEvents: events shows the Events recorded for the GitSync, not those
// of another GitSync.
func TestEvents(t *testing.T) {
	t.Parallel()
	c := statusClient(t)
	ns := env.Namespace(t)
	createGitSync(t, c, ns, "web", gitsyncv1.GitSyncStatus{})
	createGitSync(t, c, ns, "api", gitsyncv1.GitSyncStatus{})
	now := metav1.Now()
	for _, e := range []struct{ name, gs, reason string }{{"e1", "web", "Synced"}, {"e2", "api", "Elsewhere"}} {
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: e.name},
			InvolvedObject: corev1.ObjectReference{APIVersion: gitsyncv1.GroupVersion.String(), Kind: "GitSync", Namespace: ns, Name: e.gs},
			Type:           corev1.EventTypeNormal, Reason: e.reason, Message: "applied main@sha1:abc",
			FirstTimestamp: now, LastTimestamp: now, Count: 1,
		}
		if err := env.Client.Create(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	r := gitsyncIn(t, ns, "events", "web")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "Synced") || !strings.Contains(r.stdout, "applied main@sha1:abc") || strings.Contains(r.stdout, "Elsewhere") {
		t.Errorf("want web's event only, got:\n%s", r)
	}
}

// TestCompletion: shell completion offers the GitSyncs of the namespace,
// NAMESPACE/NAME for diff --gitsync, and the cluster's namespaces for -n.
func TestCompletion(t *testing.T) {
	t.Parallel()
	c := statusClient(t)
	ns := env.Namespace(t)
	createGitSync(t, c, ns, "web", gitsyncv1.GitSyncStatus{})
	createGitSync(t, c, ns, "api", gitsyncv1.GitSyncStatus{})
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "reconcile", "-n", ns, ""}, []string{"api", "web"}},
		{[]string{"__complete", "tree", "-n", ns, "w"}, []string{"web"}},
		{[]string{"__complete", "diff", "--gitsync", ns + "/a"}, []string{ns + "/api"}},
		{[]string{"__complete", "status", "-n", ns[:4]}, []string{ns}},
	} {
		r := gitsync(t, append(tc.args[:1], append([]string{"--kubeconfig", env.Kubeconfig}, tc.args[1:]...)...)...)
		wantCode(t, r, 0)
		got := lines(r.stdout, "")
		got = got[:len(got)-1] // the directive line
		for _, w := range tc.want {
			if !strings.Contains(strings.Join(got, "\n"), w) {
				t.Errorf("%v: want %q offered, got:\n%s", tc.args, w, r)
			}
		}
		if tc.args[1] == "tree" && len(got) != 1 {
			t.Errorf("%v: want only web, got %q", tc.args, got)
		}
	}
}
