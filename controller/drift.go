package controller

import (
	"context"
	"maps"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/livecache"
)

// The kinds GitSyncs applied are watched through the same caches the
// appliers read from (livecache.Kinds). What an event of a managed object
// means is decided here: a change made out of band requeues the owning
// GitSync (drift), and while a GitSync waits for the health of its
// objects, every change of them does.

// newDriftWatch returns the kinds watch whose events requeue owners as
// driftPredicate says, for the GitSyncs in waits.
func newDriftWatch(c livecache.Watcher, waits *waitSet) *livecache.Kinds {
	return livecache.NewKinds(c, handler.TypedEnqueueRequestsFromMapFunc(ownerOf), driftPredicate(waits))
}

// ownerOf maps a managed object to its GitSync through the owner labels.
func ownerOf(_ context.Context, obj *unstructured.Unstructured) []reconcile.Request {
	key, ok := ownerKey(obj)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}

func ownerKey(obj *unstructured.Unstructured) (types.NamespacedName, bool) {
	l := obj.GetLabels()
	name, ns := l[v1.LabelName], l[v1.LabelNamespace]
	return types.NamespacedName{Namespace: ns, Name: name}, name != "" && ns != ""
}

// driftPredicate passes deletions and changes people make to a managed
// object (spec, labels, annotations, data), not status updates by
// controllers nor the initial listing of an informer (the GitSyncs that
// applied those objects just reconciled) — except for a GitSync in waits:
// every change of its objects, status included, may be the one that makes
// it ready.
func driftPredicate(waits *waitSet) predicate.TypedPredicate[*unstructured.Unstructured] {
	return predicate.TypedFuncs[*unstructured.Unstructured]{
		CreateFunc: func(e event.TypedCreateEvent[*unstructured.Unstructured]) bool { return waits.hasOwner(e.Object) },
		UpdateFunc: func(e event.TypedUpdateEvent[*unstructured.Unstructured]) bool {
			if !isManaged(e.ObjectOld) && !isManaged(e.ObjectNew) {
				return false
			}
			return nonStatusChanged(e.ObjectOld, e.ObjectNew) || waits.hasOwner(e.ObjectNew) || waits.hasOwner(e.ObjectOld)
		},
		DeleteFunc:  func(e event.TypedDeleteEvent[*unstructured.Unstructured]) bool { return isManaged(e.Object) },
		GenericFunc: func(event.TypedGenericEvent[*unstructured.Unstructured]) bool { return false },
	}
}

func isManaged(obj *unstructured.Unstructured) bool {
	return obj != nil && obj.GetLabels()[v1.LabelName] != ""
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

// waitSet is the GitSyncs waiting for the health of their objects.
type waitSet struct {
	mu   sync.Mutex
	keys map[types.NamespacedName]bool
}

func (w *waitSet) set(key types.NamespacedName, waiting bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !waiting {
		delete(w.keys, key)
		return
	}
	if w.keys == nil {
		w.keys = map[types.NamespacedName]bool{}
	}
	w.keys[key] = true
}

// hasOwner reports whether obj's owner waits.
func (w *waitSet) hasOwner(obj *unstructured.Unstructured) bool {
	key, ok := ownerKey(obj)
	if !ok {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.keys[key]
}
