package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gitsynctest"
	"gitsync.dev/gitsync/object"
)

func configMap(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
}

func newGitSync(ns, name, url string, mutate ...func(*v1.GitSync)) *v1.GitSync {
	return gitsynctest.New(ns, name, url, mutate...)
}

// waitCondition waits until the GitSync's condition t has status s for its
// current generation and returns the GitSync.
func waitCondition(t *testing.T, c client.Client, key client.ObjectKey, typ string, s metav1.ConditionStatus, extra func(*v1.GitSync) bool) *v1.GitSync {
	t.Helper()
	gs := &v1.GitSync{}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, gs); err != nil {
			return false, nil
		}
		cond := meta.FindStatusCondition(gs.Status.Conditions, typ)
		return cond != nil && cond.Status == s && gs.Status.ObservedGeneration == gs.Generation && (extra == nil || extra(gs)), nil
	})
	if err != nil {
		t.Fatalf("GitSync %s %s=%s: %v\nlast seen: generation %d, status %+v", key, typ, s, err, gs.Generation, gs.Status)
	}
	return gs
}

func getCM(t *testing.T, c client.Client, ns, name string) (*corev1.ConfigMap, error) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm)
	return cm, err
}

// request asks the agent to reconcile gs now, the way a user would.
func request(t *testing.T, c client.Client, key client.ObjectKey, value string) {
	t.Helper()
	gs := &v1.GitSync{}
	if err := c.Get(context.Background(), key, gs); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(gs.DeepCopy())
	metav1.SetMetaDataAnnotation(&gs.ObjectMeta, v1.AnnotationRequestedAt, value)
	if err := c.Patch(context.Background(), gs, patch); err != nil {
		t.Fatal(err)
	}
}

// poke changes an annotation gitsync does not read, which makes the agent
// reconcile the GitSync without asking for anything: unlike requested-at,
// whose handling the status acknowledges (lastHandledRequestedAt), nothing
// about the GitSync has changed, so nothing may be written.
func poke(t *testing.T, c client.Client, key client.ObjectKey, value string) {
	t.Helper()
	gs := &v1.GitSync{}
	if err := c.Get(context.Background(), key, gs); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(gs.DeepCopy())
	metav1.SetMetaDataAnnotation(&gs.ObjectMeta, "test.gitsync.dev/poke", value)
	if err := c.Patch(context.Background(), gs, patch); err != nil {
		t.Fatal(err)
	}
}

// settle waits until what the first sync of key set going in the
// background is done, so that requests counted afterwards are the next
// reconcile's alone: successes reconciles have returned (the metric moved
// past them), the first sync's Applied event is written (the event sink
// posts asynchronously), and the drift watch of ConfigMaps has listed (its
// LIST is a read). Each is an observable event, not a pause. It replaced a
// 200 ms sleep that failed 2 of 17 runs on a loaded machine.
func (a *agent) settle(t *testing.T, c client.Client, key client.ObjectKey, successes uint64) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d successful reconciles returned", successes), func(context.Context) (bool, error) {
		return a.reconciles(t, "success") >= successes, nil
	})
	eventually(t, "the first sync's Applied event written", func(ctx context.Context) (bool, error) {
		evs := &corev1.EventList{}
		if err := c.List(ctx, evs, client.InNamespace(key.Namespace)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == key.Name && e.Reason == "Applied" {
				return true, nil
			}
		}
		return false, nil
	})
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := a.cache.GetInformer(ctx, cm, cache.BlockUntilSynced(true)); err != nil {
		t.Fatalf("drift watch of ConfigMaps never synced: %v", err)
	}
}

// statusFields returns gs's managedFields entries of the status
// subresource.
func statusFields(gs *v1.GitSync) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, f := range gs.ManagedFields {
		if f.Subresource == "status" {
			out = append(out, f)
		}
	}
	return out
}

// TestSyncLifecycle follows one GitSync through the life of a repository:
// first sync, a converged resync that writes nothing, a new commit, a file
// removed (pruned), a broken manifest (stalled, nothing pruned, last good
// objects kept), and the fix.
func TestSyncLifecycle(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	r := newRepo(t)
	commit1 := r.commit(map[string]string{"deploy/a.yaml": configMap("a", "1"), "deploy/b.yaml": configMap("b", "1")})

	gs := newGitSync(ns, "app", r.url())
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	gs = waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	if !strings.Contains(gs.Status.LastAppliedRevision, commit1) {
		t.Errorf("lastAppliedRevision = %q, want commit %s", gs.Status.LastAppliedRevision, commit1)
	}
	if gs.Status.LastAppliedTime == nil {
		t.Error("lastAppliedTime not set after the first sync")
	}
	if n := gs.Status.Inventory; n == nil || len(n.Entries) != 2 {
		t.Errorf("inventory = %+v, want 2 entries", n)
	}
	cm, err := getCM(t, c, ns, "a")
	if err != nil {
		t.Fatalf("ConfigMap a not applied: %v", err)
	}
	if !object.OwnedBy(cm.Labels, "app", ns) {
		t.Errorf("ConfigMap a labels = %v, want owner labels", cm.Labels)
	}

	t.Run("converged resync writes nothing", func(t *testing.T) {
		before := gs.ResourceVersion
		a.settle(t, c, key, 1)
		for i := range 3 {
			done := a.reconciles(t, "success")
			writes, reads := a.count.writes.Load(), a.count.reads.Load()
			mark := len(a.count.requests())
			poke(t, c, key, fmt.Sprint("resync-", i))
			eventually(t, "resync reconcile", func(context.Context) (bool, error) { return a.reconciles(t, "success") > done, nil })
			if w, rd := a.count.writes.Load()-writes, a.count.reads.Load()-reads; w != 0 || rd != 0 {
				t.Errorf("resync %d sent %d writes and %d non-watch reads, want 0 and 0: %v", i, w, rd, a.count.requests()[mark:])
			}
		}
		got := &v1.GitSync{}
		if err := c.Get(context.Background(), key, got); err != nil {
			t.Fatal(err)
		}
		// The annotation patches of the test bump the resourceVersion; the
		// status must be exactly what it was.
		if got.ResourceVersion == before {
			t.Fatalf("test bug: annotation patches did not change resourceVersion")
		}
		if diff := cmp.Diff(gs.Status, got.Status); diff != "" {
			t.Errorf("status rewritten (-before +after):\n%s", diff)
		}
		// The status entry of managedFields moves with every status write
		// (a timestamp compared with the clock instead failed whenever the
		// first sync had written less than a second before).
		if diff := cmp.Diff(statusFields(gs), statusFields(got)); diff != "" {
			t.Errorf("status written during the resyncs: managedFields (-before +after):\n%s", diff)
		}
	})

	t.Run("triggered resyncs leave the GitSync untouched", func(t *testing.T) {
		// A webhook-style trigger (which also asks the remote again) writes
		// nothing when nothing changed, so the resourceVersion stays put.
		before := &v1.GitSync{}
		if err := c.Get(context.Background(), key, before); err != nil {
			t.Fatal(err)
		}
		a.settle(t, c, key, 4)
		writes, reads := a.count.writes.Load(), a.count.reads.Load()
		for i := range 3 {
			done := a.reconciles(t, "success")
			a.rec.Trigger(key)
			eventually(t, fmt.Sprint("triggered reconcile ", i), func(context.Context) (bool, error) { return a.reconciles(t, "success") > done, nil })
		}
		if w, rd := a.count.writes.Load()-writes, a.count.reads.Load()-reads; w != 0 || rd != 0 {
			t.Errorf("3 triggered resyncs sent %d writes and %d non-watch reads, want 0 and 0", w, rd)
		}
		after := &v1.GitSync{}
		if err := c.Get(context.Background(), key, after); err != nil {
			t.Fatal(err)
		}
		if after.ResourceVersion != before.ResourceVersion {
			t.Errorf("GitSync resourceVersion %s -> %s: a converged resync wrote it", before.ResourceVersion, after.ResourceVersion)
		}
	})

	t.Run("new commit is applied", func(t *testing.T) {
		commit2 := r.commit(map[string]string{"deploy/a.yaml": configMap("a", "2")})
		request(t, c, key, "commit2")
		waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
			return strings.Contains(g.Status.LastAppliedRevision, commit2)
		})
		if cm, err := getCM(t, c, ns, "a"); err != nil || cm.Data["value"] != "2" {
			t.Errorf("ConfigMap a = %v, %v; want value 2", cm.Data, err)
		}
	})

	t.Run("removed file is pruned", func(t *testing.T) {
		commit3 := r.commit(map[string]string{"deploy/b.yaml": ""})
		request(t, c, key, "commit3")
		g := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
			return strings.Contains(g.Status.LastAppliedRevision, commit3)
		})
		eventually(t, "ConfigMap b pruned", func(context.Context) (bool, error) {
			_, err := getCM(t, c, ns, "b")
			return apierrors.IsNotFound(err), nil
		})
		if n := g.Status.Inventory; n == nil || len(n.Entries) != 1 {
			t.Errorf("inventory = %+v, want 1 entry", n)
		}
	})

	t.Run("broken manifest stalls and keeps the last good state", func(t *testing.T) {
		good := &v1.GitSync{}
		if err := c.Get(context.Background(), key, good); err != nil {
			t.Fatal(err)
		}
		commit4 := r.commit(map[string]string{"deploy/a.yaml": "", "deploy/broken.yaml": "kind: [unclosed\n"})
		request(t, c, key, "commit4")
		g := waitCondition(t, c, key, v1.ConditionStalled, metav1.ConditionTrue, nil)
		ready := meta.FindStatusCondition(g.Status.Conditions, v1.ConditionReady)
		if ready.Status != metav1.ConditionFalse || ready.Reason != v1.ReasonRenderFailed || !strings.Contains(ready.Message, "broken.yaml") {
			t.Errorf("Ready = %+v, want False/RenderFailed naming broken.yaml", ready)
		}
		if !strings.Contains(g.Status.LastAttemptedRevision, commit4) || g.Status.LastAppliedRevision != good.Status.LastAppliedRevision {
			t.Errorf("revisions attempted %q applied %q; want attempted %s, applied unchanged %q",
				g.Status.LastAttemptedRevision, g.Status.LastAppliedRevision, commit4, good.Status.LastAppliedRevision)
		}
		if _, err := getCM(t, c, ns, "a"); err != nil {
			t.Errorf("ConfigMap a pruned or lost after a broken render: %v", err)
		}
		if diff := cmp.Diff(good.Status.Inventory, g.Status.Inventory); diff != "" {
			t.Errorf("inventory changed by a broken render (-before +after):\n%s", diff)
		}
	})

	t.Run("fix recovers", func(t *testing.T) {
		commit5 := r.commit(map[string]string{"deploy/broken.yaml": configMap("c", "1")})
		request(t, c, key, "commit5")
		g := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
			return strings.Contains(g.Status.LastAppliedRevision, commit5)
		})
		if meta.FindStatusCondition(g.Status.Conditions, v1.ConditionStalled) != nil {
			t.Errorf("Stalled still set: %+v", g.Status.Conditions)
		}
		eventually(t, "ConfigMap a pruned after the fix", func(context.Context) (bool, error) {
			_, err := getCM(t, c, ns, "a")
			return apierrors.IsNotFound(err), nil
		})
	})
}
