package controller_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/testenv"
)

// TestFaultApplyErrors: the apiserver answers 500 or 429 (with Retry-After)
// to the apply of one ConfigMap in the middle of a revision. The GitSync
// says ApplyFailed naming the object, what was applied is recorded (no
// orphan), nothing still in Git is deleted, and once the fault is gone the
// retry converges without a new commit.
//
// Checked: with engine.Run saving the stored inventory instead of the
// pending and applied entries after an apply error, assertNoOrphans
// reports d. rule.Matched proves the fault was hit.
func TestFaultApplyErrors(t *testing.T) {
	for name, fault := range map[string]testenv.Fault{
		"500": {Status: http.StatusInternalServerError},
		"429": {Status: http.StatusTooManyRequests, RetryAfter: time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			f := startFaultCase(t, map[string]string{"deploy/a.yaml": configMap("a", "1"), "deploy/b.yaml": configMap("b", "1")})
			before := f.uids(t, "a", "b")
			commit2 := f.repo.commit(map[string]string{
				"deploy/a.yaml": configMap("a", "2"),
				"deploy/c.yaml": configMap("c", "1"),
				"deploy/d.yaml": configMap("d", "1"),
			})
			fault.Method, fault.Path, fault.Query = http.MethodPatch, configMapPath(f.ns, "c"), realWrite
			rule := f.proxy.MustInject(t, fault)
			request(t, f.c, f.key, "commit2")
			f.waitNotReady(t, v1.ReasonApplyFailed, "ConfigMap/"+f.ns+"/c")
			f.assertSurvived(t, before)
			assertNoOrphans(t, f.ns)

			rule.Clear()
			f.waitApplied(t, commit2)
			f.assertSurvived(t, before)
			assertNoOrphans(t, f.ns)
			if cm, err := getCM(t, f.c, f.ns, "c"); err != nil || cm.Data["value"] != "1" {
				t.Errorf("ConfigMap c after recovery: %v %v", cm.Data, err)
			}
			if rule.Matched() == 0 {
				t.Error("the fault never matched: the test proved nothing")
			}
		})
	}
}

// TestFaultStatusWriteFailsAfterApply: status writes fail (500) right after
// a new ConfigMap c was applied, so the inventory recording it after the
// apply is never saved; then c is removed from Git. c must be pruned: the
// inventory is written before the objects (pending entries), so c was
// recorded before it existed.
//
// Checked: with engine.Run's pending record disabled it fails at "ConfigMap
// c left Git and is pruned" — the bug of issue 12 as on the tree before
// pending inventories.
func TestFaultStatusWriteFailsAfterApply(t *testing.T) {
	f := startFaultCase(t, map[string]string{"deploy/a.yaml": configMap("a", "1")})
	before := f.uids(t, "a")
	f.repo.commit(map[string]string{"deploy/c.yaml": configMap("c", "1")})
	applied := f.proxy.MustInject(t, testenv.Fault{Method: http.MethodPatch, Path: configMapPath(f.ns, "c"), Query: realWrite})
	statusFails := f.proxy.MustInject(t, testenv.Fault{
		Method: http.MethodPatch, Path: gitSyncPath(f.ns, "app", "/status"), Status: http.StatusInternalServerError, After: applied,
	})
	request(t, f.c, f.key, "commit2")
	eventually(t, "c applied and a status write failed after it", func(ctx context.Context) (bool, error) {
		_, err := getCM(t, f.c, f.ns, "c")
		return err == nil && statusFails.Matched() > 0, nil
	})

	commit3 := f.repo.commit(map[string]string{"deploy/c.yaml": ""})
	statusFails.Clear()
	request(t, f.c, f.key, "commit3")
	f.waitApplied(t, commit3)
	eventually(t, "ConfigMap c left Git and is pruned", func(context.Context) (bool, error) {
		_, err := getCM(t, f.c, f.ns, "c")
		return apierrors.IsNotFound(err), nil
	})
	f.assertSurvived(t, before)
	assertNoOrphans(t, f.ns)
}

// TestFaultConflictOnGitSyncUpdate: the first writes of the GitSync (the
// finalizer patch and status writes) are answered 409 Conflict, as when
// another writer got there first. The agent re-reads and retries: it ends
// Ready with every object recorded and nothing applied twice under a new
// UID.
//
// Checked: with the reconciler returning no error when its status write
// failed (so nothing retries it), the GitSync never becomes Ready at the
// new commit and the test fails. The rules' counts prove the 409s were
// sent.
func TestFaultConflictOnGitSyncUpdate(t *testing.T) {
	f := startFaultCase(t, map[string]string{"deploy/a.yaml": configMap("a", "1")})
	before := f.uids(t, "a")
	commit2 := f.repo.commit(map[string]string{"deploy/b.yaml": configMap("b", "1")})
	status := f.proxy.MustInject(t, testenv.Fault{
		Method: http.MethodPatch, Path: gitSyncPath(f.ns, "app", "/status"), Status: http.StatusConflict, Times: 3,
	})
	request(t, f.c, f.key, "commit2")
	gs := f.waitApplied(t, commit2)
	if status.Matched() != 3 {
		t.Errorf("409 answered to %d status writes, want 3", status.Matched())
	}
	if ready := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReady); !strings.Contains(ready.Message, commit2) {
		t.Errorf("Ready message %q does not name %s", ready.Message, commit2)
	}
	f.assertSurvived(t, before)
	assertNoOrphans(t, f.ns)

	// A GitSync created while its metadata writes conflict gets its
	// finalizer and syncs all the same.
	meta409 := f.proxy.MustInject(t, testenv.Fault{
		Method: http.MethodPatch, Path: gitSyncPath(f.ns, "second", ""), Status: http.StatusConflict, Times: 2,
	})
	second := newGitSync(f.ns, "second", f.repo.url(), func(g *v1.GitSync) {
		g.Spec.Source.Path = "other"
		g.Spec.RetryInterval = &metav1.Duration{Duration: time.Second}
	})
	f.repo.commit(map[string]string{"other/x.yaml": configMap("x", "1")})
	if err := f.c.Create(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	got := waitCondition(t, f.c, client.ObjectKeyFromObject(second), v1.ConditionReady, metav1.ConditionTrue, nil)
	if len(got.Finalizers) == 0 || meta409.Matched() != 2 {
		t.Errorf("finalizers %v after %d conflicting metadata patches; want the finalizer after 2", got.Finalizers, meta409.Matched())
	}
	assertNoOrphans(t, f.ns)
}
