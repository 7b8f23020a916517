package controller

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

func ownedConfigMap(owner, name, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("apps")
	u.SetName(name)
	u.SetResourceVersion(rv)
	u.SetLabels(map[string]string{v1.LabelName: owner, v1.LabelNamespace: "apps"})
	return u
}

// TestOwnerHandlerRaisesWaitingGitSyncs: three GitSyncs' first syncs wait
// in the queue when an object of a fourth, which waits for its objects'
// health, changes: the fourth is handed out first. A change of an object
// whose owner does not wait queues behind them, and one of an informer's
// initial listing behind everything. Queued through controller-runtime's
// own priority queue.
//
// Checked with controller-runtime's mapping handler (what the drift watch
// used before): "waiting" came fifth, after the change of the GitSync
// that does not wait.
func TestOwnerHandlerRaisesWaitingGitSyncs(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	for _, name := range []string{"first-a", "first-b", "first-c"} {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "apps", Name: name}})
	}
	waits := &waitSet{}
	waits.set(types.NamespacedName{Namespace: "apps", Name: "waiting"}, true)
	h := ownerHandler{waits: waits}
	ctx := context.Background()
	h.Create(ctx, event.TypedCreateEvent[*unstructured.Unstructured]{Object: ownedConfigMap("listed", "x", "1"), IsInInitialList: true}, q)
	h.Update(ctx, event.TypedUpdateEvent[*unstructured.Unstructured]{ObjectOld: ownedConfigMap("drifted", "y", "1"), ObjectNew: ownedConfigMap("drifted", "y", "2")}, q)
	h.Update(ctx, event.TypedUpdateEvent[*unstructured.Unstructured]{ObjectOld: ownedConfigMap("waiting", "z", "1"), ObjectNew: ownedConfigMap("waiting", "z", "2")}, q)

	want := []string{"waiting:20", "first-a:0", "first-b:0", "first-c:0", "drifted:0", "listed:-100"}
	var got []string
	for range want {
		req, prio, _ := q.GetWithPriority()
		got = append(got, fmt.Sprintf("%s:%d", req.Name, prio))
		q.Done(req)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order handed out (-want +got):\n%s", diff)
	}
}

// TestSettleEndsEveryRaise: controller-runtime requeues an item at the
// priority it was handed out at unless the result names one, so a raised
// GitSync (health, changed content) would keep its rank for every interval
// after. settle requeues at 0 unless the reconcile chose a priority.
func TestSettleEndsEveryRaise(t *testing.T) {
	if got := settle(ctrl.Result{}); got.Priority == nil || *got.Priority != 0 {
		t.Errorf("settle of a result without a priority = %v, want priority 0", got.Priority)
	}
	if got := settle(ctrl.Result{Priority: new(priorityChanged)}); got.Priority == nil || *got.Priority != priorityChanged {
		t.Errorf("settle of a result at priority %d = %v, want it kept", priorityChanged, got.Priority)
	}
}
