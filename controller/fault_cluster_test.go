package controller_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/testenv"
	"gitsync.dev/gitsync/object"
)

// TestFaultAPIServerRestartMidApply: the apiserver is stopped while the
// apply of a revision is in flight (the proxy holds ConfigMap c's apply
// until the apiserver is down, then forwards it into the void) and started
// again. The agent retries on its own and converges: every object of the
// revision applied and recorded, nothing deleted.
//
// The held rule proves the apply of c was in flight when the apiserver
// died, and the reconcile metric the failed attempt ("retry") it caused.
// No single guard was removed to check it: recovery rests on the
// reconciler's retry, checked by TestFaultConflictOnGitSyncUpdate.
func TestFaultAPIServerRestartMidApply(t *testing.T) {
	f := startFaultCase(t, map[string]string{"deploy/a.yaml": configMap("a", "1"), "deploy/b.yaml": configMap("b", "1")})
	before := f.uids(t, "a", "b")
	commit2 := f.repo.commit(map[string]string{
		"deploy/a.yaml": configMap("a", "2"),
		"deploy/c.yaml": configMap("c", "1"),
		"deploy/d.yaml": configMap("d", "1"),
	})
	hold := make(chan struct{})
	held := f.proxy.MustInject(t, testenv.Fault{Method: http.MethodPatch, Path: configMapPath(f.ns, "c"), Query: realWrite, Hold: hold, Times: 1})
	retries := f.agent.reconciles(t, "retry")
	request(t, f.c, f.key, "commit2")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := held.WaitSeen(ctx); err != nil {
		t.Fatal(err)
	}
	if err := env.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	close(hold)
	if err := env.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	f.waitApplied(t, commit2)
	f.assertSurvived(t, before)
	assertNoOrphans(t, f.ns)
	for _, n := range []string{"c", "d"} {
		if _, err := getCM(t, f.c, f.ns, n); err != nil {
			t.Errorf("ConfigMap %s of the revision applied during the outage: %v", n, err)
		}
	}
	if f.agent.reconciles(t, "retry") == retries {
		t.Error("no reconcile failed: the outage did not hit the apply")
	}
}

// TestFaultAdmissionDeniesPrune: a ValidatingAdmissionPolicy denies the
// DELETE of a ConfigMap that left Git. The GitSync says PruneFailed naming
// it, keeps it in its inventory, retries without a new commit, and prunes
// it once the policy is gone.
//
// Checked: with engine.Run recording only the applied inventory after a
// prune (failed entries dropped), the test reports b dropped from the
// inventory, an orphan, and never retried.
func TestFaultAdmissionDeniesPrune(t *testing.T) {
	f := startFaultCase(t, map[string]string{
		"deploy/a.yaml": configMap("a", "1"),
		"deploy/b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  labels:\n    protect: \"yes\"\ndata:\n  value: \"1\"\n",
	})
	before := f.uids(t, "a", "b")
	policy := env.DenyProtectedDeletes(t, f.ns)
	commit2 := f.repo.commit(map[string]string{"deploy/b.yaml": ""})
	deletes := f.proxy.MustInject(t, testenv.Fault{Method: http.MethodDelete, Path: configMapPath(f.ns, "b")})
	request(t, f.c, f.key, "commit2")
	gs := f.waitNotReady(t, v1.ReasonPruneFailed, "ConfigMap/"+f.ns+"/b")
	if !recorded(t, gs, object.ID{Kind: "ConfigMap", Namespace: f.ns, Name: "b"}) {
		t.Errorf("ConfigMap b dropped from the inventory after its prune was denied: %+v", gs.Status.Inventory)
	}
	f.assertSurvived(t, before)
	assertNoOrphans(t, f.ns)
	eventually(t, "denied prune retried without a new commit", func(context.Context) (bool, error) {
		return deletes.Matched() >= 2, nil
	})

	policy.Lift(t)
	f.waitApplied(t, commit2)
	eventually(t, "ConfigMap b pruned once allowed", func(context.Context) (bool, error) {
		_, err := getCM(t, f.c, f.ns, "b")
		return apierrors.IsNotFound(err), nil
	})
	f.assertSurvived(t, map[string]types.UID{"a": before["a"]})
	assertNoOrphans(t, f.ns)
}

// recorded reports whether gs's status inventory lists id.
func recorded(t *testing.T, gs *v1.GitSync, id object.ID) bool {
	t.Helper()
	if gs.Status.Inventory == nil {
		return false
	}
	return slices.ContainsFunc(gs.Status.Inventory.Entries, func(e v1.InventoryEntry) bool { return e.ID == id.Key() })
}
