package controller_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// TestStatusWritesPerSync: a sync that creates objects writes the
// GitSync's status twice: the pending record before the apply, and one
// report that carries the final inventory with the conditions; a sync that
// only changes existing objects writes it once. Before, the inventory
// recorded after the apply was its own write (3 and 2). Crash safety rests
// on the pending record (TestFaultAgentKilled, TestFinalSaveByCaller).
func TestStatusWritesPerSync(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns, concurrent: 1})
	ctx := context.Background()
	r := newRepo(t)
	files := map[string]string{"deploy/a.yaml": configMap("a", "one"), "deploy/b.yaml": configMap("b", "one")}
	first := r.commit(files)
	gs := newGitSync(ns, "app", r.url())
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	statusPath := "/apis/gitsync.dev/v1alpha1/namespaces/" + ns + "/gitsyncs/app/status"
	statusWrites := func() int {
		n := 0
		for _, req := range a.count.requests() {
			if req == "PATCH "+statusPath {
				n++
			}
		}
		return n
	}
	ready := func(commit string) *v1.GitSync {
		return waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
			return strings.Contains(g.Status.LastAppliedRevision, commit)
		})
	}
	got := ready(first)
	if n := statusWrites(); n != 2 {
		t.Errorf("the first sync wrote the status %d times, want 2 (pending record, report): %v", n, a.count.requests())
	}
	if got.Status.Inventory == nil || len(got.Status.Inventory.Entries) != 2 {
		t.Fatalf("inventory after the first sync: %+v, want a and b", got.Status.Inventory)
	}
	for _, e := range got.Status.Inventory.Entries {
		if e.Pending || e.UID == "" {
			t.Errorf("inventory entry %+v: want it applied, with its UID", e)
		}
	}

	files["deploy/a.yaml"] = configMap("a", "two")
	second := r.commit(files)
	before := statusWrites()
	a.rec.Trigger(key)
	ready(second)
	if n := statusWrites() - before; n != 1 {
		t.Errorf("a sync that changed an existing object wrote the status %d times, want 1", n)
	}
}
