package controller

import (
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/livecache"
)

// The kinds GitSyncs applied are watched through the same caches the
// appliers read from (livecache.Kinds). What an event of a managed object
// means is decided here: a change made out of band requeues the owning
// GitSync (drift), and while a GitSync waits for the health of its
// objects, every change of them does.

// newDriftWatch returns the kinds watch whose events requeue owners as
// driftPredicate says, for the GitSyncs in waits (ownerHandler).
func newDriftWatch(c livecache.Watcher, waits *waitSet) *livecache.Kinds {
	return livecache.NewKinds(c, ownerHandler{waits: waits}, driftPredicate(waits))
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
	return ok && w.has(key)
}

// has reports whether the GitSync key waits.
func (w *waitSet) has(key types.NamespacedName) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.keys[key]
}

// maxDriftSubjects bounds the objects the Drifted condition names.
const maxDriftSubjects = 10

// setDrifted sets the Drifted condition of a GitSync in spec.drift.mode
// Detect from the sync's change set: True naming the objects (and their
// fields) that differ from Git, False when none does. Without Detect the
// condition goes; a sync that stopped before applying leaves it as it was.
// The message is out.drift, masked by the sync's redactor.
func setDrifted(s *v1.GitSyncStatus, gen int64, out *outcome) {
	if !out.detect {
		meta.RemoveStatusCondition(&s.Conditions, v1.ConditionDrifted)
		return
	}
	if out.changes == nil {
		return
	}
	c := metav1.Condition{Type: v1.ConditionDrifted, Status: metav1.ConditionFalse, Reason: v1.ReasonNoDrift,
		Message: "every object matches Git", ObservedGeneration: gen}
	if out.drift != "" {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1.ReasonDriftDetected, clipMessage(out.drift)
	}
	meta.SetStatusCondition(&s.Conditions, c)
}

// driftMessage names the drifted objects and where they differ, e.g.
// "1 object differs from Git and is left as it is (spec.drift.mode Detect):
// Deployment/prod/web (/spec/replicas)"; empty for none.
func driftMessage(drifted []apply.Entry) string {
	if len(drifted) == 0 {
		return ""
	}
	parts := make([]string, 0, min(len(drifted), maxDriftSubjects))
	for i, e := range drifted {
		if i == maxDriftSubjects {
			parts = append(parts, fmt.Sprintf("and %d more", len(drifted)-maxDriftSubjects))
			break
		}
		where := strings.Join(e.Fields, ", ")
		if e.Reason != "" {
			where = e.Reason
		}
		if where == "" {
			where = "a dry-run of the apply was refused"
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", e.Subject, where))
	}
	verb := "objects differ from Git and are"
	if len(drifted) == 1 {
		verb = "object differs from Git and is"
	}
	return fmt.Sprintf("%d %s left as they are (spec.drift.mode Detect): %s", len(drifted), verb, strings.Join(parts, "; "))
}

// driftedChanges is the change set whose Drifted entries the metric
// follows: none outside Detect mode (the series go), nil when the sync
// stopped before applying (they stay).
func (o *outcome) driftedChanges() *apply.ChangeSet {
	if !o.detect {
		return &apply.ChangeSet{}
	}
	return o.changes
}

// emitDrift records a Warning Event when the Drifted condition turns True
// or names other objects or fields, and a Normal one when it turns False.
func (r *GitSyncReconciler) emitDrift(gs *v1.GitSync, before *metav1.Condition) {
	after := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionDrifted)
	switch {
	case after == nil:
	case after.Status == metav1.ConditionTrue && (before == nil || before.Status != after.Status || before.Message != after.Message):
		r.recorder.Eventf(gs, nil, corev1.EventTypeWarning, v1.ReasonDriftDetected, "DetectDrift", "%s", after.Message)
	case after.Status == metav1.ConditionFalse && before != nil && before.Status == metav1.ConditionTrue:
		r.recorder.Eventf(gs, nil, corev1.EventTypeNormal, v1.ReasonNoDrift, "DetectDrift", "%s", after.Message)
	}
}
