package controller

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The work queue is controller-runtime's priority queue. Events and
// triggers wait at priority 0, the informers' initial listings at
// handler.LowPriority; two kinds of work are raised above them, for one run
// each (every requeue a reconcile asks for waits at 0 again, settle):
const (
	// priorityHealth is a GitSync waiting for the health of its objects
	// whose object just changed: the reconcile it needs only reads the
	// cache and writes Ready, and a person is watching that deploy, so it
	// does not queue behind other GitSyncs' syncs (at start-up, every
	// GitSync's first one).
	priorityHealth = 20
	// priorityChanged is a GitSync waiting for a revision that changes
	// what it renders: a push to a monorepo applies the paths it changed
	// before the GitSyncs whose content it left alone write their new
	// revision (yieldToChanged).
	priorityChanged = 10
)

// settle ends any raise: controller-runtime requeues an item at the
// priority it was taken at unless the result says otherwise, so without it
// a GitSync once raised (priorityChanged, priorityHealth) or listed at
// start-up (handler.LowPriority) would keep that rank for every interval
// and retry after.
func settle(res ctrl.Result) ctrl.Result {
	if res.Priority == nil {
		res.Priority = new(0)
	}
	return res
}

// ownerHandler requeues the GitSync that owns a managed object (its owner
// labels): at priorityHealth while that GitSync waits for its objects'
// health, else as controller-runtime's mapping handler would (priority 0,
// handler.LowPriority for an informer's initial listing and resyncs).
type ownerHandler struct {
	waits *waitSet
}

var _ handler.TypedEventHandler[*unstructured.Unstructured, reconcile.Request] = ownerHandler{}

func (h ownerHandler) Create(_ context.Context, e event.TypedCreateEvent[*unstructured.Unstructured], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.add(q, e.IsInInitialList, e.Object)
}

func (h ownerHandler) Update(_ context.Context, e event.TypedUpdateEvent[*unstructured.Unstructured], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	resync := e.ObjectOld != nil && e.ObjectNew != nil && e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion()
	h.add(q, resync, e.ObjectOld, e.ObjectNew)
}

func (h ownerHandler) Delete(_ context.Context, e event.TypedDeleteEvent[*unstructured.Unstructured], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.add(q, false, e.Object)
}

func (h ownerHandler) Generic(_ context.Context, e event.TypedGenericEvent[*unstructured.Unstructured], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.add(q, false, e.Object)
}

// add queues the owners of objs once each; low is an unchanged object (a
// listing or a resync).
func (h ownerHandler) add(q workqueue.TypedRateLimitingInterface[reconcile.Request], low bool, objs ...*unstructured.Unstructured) {
	pq, _ := q.(priorityqueue.PriorityQueue[reconcile.Request])
	var queued []reconcile.Request // at most two objects: old and new
	for _, obj := range objs {
		if obj == nil {
			continue
		}
		key, ok := ownerKey(obj)
		req := reconcile.Request{NamespacedName: key}
		if !ok || slices.Contains(queued, req) {
			continue
		}
		queued = append(queued, req)
		switch {
		case pq == nil:
			q.Add(req)
		case h.waits.has(key):
			pq.AddWithOpts(priorityqueue.AddOpts{Priority: new(priorityHealth)}, req)
		case low:
			pq.AddWithOpts(priorityqueue.AddOpts{Priority: new(handler.LowPriority)}, req)
		default:
			q.Add(req)
		}
	}
}
