package controller

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"gitsync.dev/gitsync/inventory"
)

// driftWatcher watches the kinds GitSyncs applied, through the same cache
// the appliers read from (one informer per kind, started on first use), and
// enqueues the owning GitSync when a managed object changes out of band.
type driftWatcher struct {
	ctrl controller.Controller

	mu      sync.Mutex
	watched map[driftKey]bool
}

// driftKey is one kind in one cache (the local cluster's or a remote one's).
type driftKey struct {
	cache cache.Cache
	gvk   schema.GroupVersionKind
}

func newDriftWatcher(c controller.Controller) *driftWatcher {
	return &driftWatcher{ctrl: c, watched: map[driftKey]bool{}}
}

// ensure starts watching every kind of objs in c that is not watched yet.
func (d *driftWatcher) ensure(c cache.Cache, objs []*unstructured.Unstructured) error {
	if d == nil || c == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, obj := range objs {
		key := driftKey{cache: c, gvk: obj.GroupVersionKind()}
		if d.watched[key] {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(key.gvk)
		src := source.Kind(c, u, handler.TypedEnqueueRequestsFromMapFunc(ownerOf), driftPredicate())
		if err := d.ctrl.Watch(src); err != nil {
			return fmt.Errorf("watch %s for drift: %w", key.gvk.Kind, err)
		}
		d.watched[key] = true
	}
	return nil
}

// ownerOf maps a managed object to its GitSync through the owner labels.
func ownerOf(_ context.Context, obj *unstructured.Unstructured) []reconcile.Request {
	l := obj.GetLabels()
	name, ns := l[inventory.NameLabel], l[inventory.NamespaceLabel]
	if name == "" || ns == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// driftPredicate passes deletions and changes people make to a managed
// object (spec, labels, annotations, data), not status updates by
// controllers nor the initial listing of an informer (the GitSyncs that
// applied those objects just reconciled).
func driftPredicate() predicate.TypedPredicate[*unstructured.Unstructured] {
	return predicate.TypedFuncs[*unstructured.Unstructured]{
		CreateFunc: func(event.TypedCreateEvent[*unstructured.Unstructured]) bool { return false },
		UpdateFunc: func(e event.TypedUpdateEvent[*unstructured.Unstructured]) bool {
			return (isManaged(e.ObjectOld) || isManaged(e.ObjectNew)) && nonStatusChanged(e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc:  func(e event.TypedDeleteEvent[*unstructured.Unstructured]) bool { return isManaged(e.Object) },
		GenericFunc: func(event.TypedGenericEvent[*unstructured.Unstructured]) bool { return false },
	}
}

func isManaged(obj *unstructured.Unstructured) bool {
	return obj != nil && obj.GetLabels()[inventory.NameLabel] != ""
}

// nonStatusChanged reports whether anything but status and bookkeeping
// metadata changed. Kinds with a generation bump it on every spec change;
// for the others (ConfigMaps, Secrets, ...) the content is compared.
func nonStatusChanged(old, cur *unstructured.Unstructured) bool {
	if !maps.Equal(old.GetLabels(), cur.GetLabels()) || !maps.Equal(old.GetAnnotations(), cur.GetAnnotations()) {
		return true
	}
	if old.GetDeletionTimestamp() == nil && cur.GetDeletionTimestamp() != nil {
		return true
	}
	if old.GetGeneration() != 0 || cur.GetGeneration() != 0 {
		return old.GetGeneration() != cur.GetGeneration()
	}
	for k, v := range cur.Object {
		if k == "metadata" || k == "status" {
			continue
		}
		if !reflect.DeepEqual(v, old.Object[k]) {
			return true
		}
	}
	for k := range old.Object {
		if _, ok := cur.Object[k]; !ok && k != "status" {
			return true
		}
	}
	return false
}
