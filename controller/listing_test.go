package controller_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/testenv"
)

// TestSyncsWhileTheCacheLists: while the watch cache's first listing of a
// kind has not ended (held here; after a restart at scale it takes tens of
// seconds), a GitSync syncs anyway: its reads of that kind are one LIST of
// its namespace's managed objects, and what it reads is right (an
// unchanged object is not written again). Once the listing ends, syncs read
// the cache and list nothing, and a change made during the listing (which
// comes as part of it, not as a watch event) is repaired: the GitSync is
// reconciled again once its watch is live. Before, the first sync waited
// for the listing (at most 30 s, then failed and retried the same way).
// Checked by not calling AfterListing in sync: b's drift stays.
func TestSyncsWhileTheCacheLists(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	proxy := env.NewFaultProxy(t)
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	held := proxy.MustInject(t, testenv.Fault{
		Method: http.MethodGet, Path: `^/api/v1/configmaps$`, Query: map[string]string{"sendInitialEvents": "true"}, Hold: release,
	})
	a := startAgent(t, agentOptions{namespace: ns, config: proxy.Config, concurrent: 1})
	t.Cleanup(open) // before the agent stops
	ctx := context.Background()
	r := newRepo(t)
	files := map[string]string{"deploy/a.yaml": configMap("a", "one"), "deploy/b.yaml": configMap("b", "one")}
	first := r.commit(files)
	gs := newGitSync(ns, "app", r.url())
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	ready := func(commit string) {
		t.Helper()
		waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
			return strings.Contains(g.Status.LastAppliedRevision, commit)
		})
	}
	nsList := "GET /api/v1/namespaces/" + ns + "/configmaps"
	count := func(want string) int {
		n := 0
		for _, req := range a.count.requests() {
			if req == want {
				n++
			}
		}
		return n
	}
	ready(first)
	if held.Matched() == 0 {
		t.Fatal("the watch cache never asked for its listing: the test proved nothing")
	}
	if count(nsList) == 0 {
		t.Errorf("synced without listing its namespace: %v", a.count.requests())
	}

	files["deploy/a.yaml"] = configMap("a", "two")
	second := r.commit(files)
	a.rec.Trigger(key)
	ready(second)
	patchB := "PATCH /api/v1/namespaces/" + ns + "/configmaps/b"
	if n := count(patchB); n != 1 {
		t.Errorf("b was written %d times, want once (created; unchanged in the second sync)", n)
	}
	if cm, err := getCM(t, c, ns, "a"); err != nil || cm.Data["value"] != "two" {
		t.Fatalf("ConfigMap a = %v, %v; want value two", cm.Data, err)
	}

	// A change while the listing is held comes with the listing, as no
	// watch event: the GitSync is reconciled again once the watch is live.
	b, err := getCM(t, c, ns, "b")
	if err != nil {
		t.Fatal(err)
	}
	edit := client.MergeFrom(b.DeepCopy())
	b.Data["value"] = "edited by hand"
	if err := c.Patch(ctx, b, edit, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	open()
	eventually(t, "b's drift, made during the listing, repaired after it", func(context.Context) (bool, error) {
		b, err := getCM(t, c, ns, "b")
		return err == nil && b.Data["value"] == "one", nil
	})
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	eventually(t, "the watch cache to list ConfigMaps", func(ctx context.Context) (bool, error) {
		inf, err := a.cache.GetInformer(ctx, u, cache.BlockUntilSynced(false))
		return err == nil && inf.HasSynced(), nil
	})
	lists := count(nsList)
	files["deploy/a.yaml"] = configMap("a", "three")
	third := r.commit(files)
	a.rec.Trigger(key)
	ready(third)
	if n := count(nsList) - lists; n != 0 {
		t.Errorf("a sync after the listing ended listed its namespace %d times, want none", n)
	}
}
