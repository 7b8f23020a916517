package controller

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// A GitSync with spec.dependsOn fetches and applies nothing until every
// GitSync it names exists and is Ready at its current generation (a
// suspended one counts when it applied a revision before: its objects are
// there). Until then it is Reconciling with reason DependencyNotReady,
// naming each dependency and why; its objects are neither applied, repaired
// nor pruned. A dependsOn chain leading back to the GitSync is Stalled
// (DependencyCycle) naming the cycle. Nothing polls: a field index on
// spec.dependsOn maps every readiness change of a GitSync to the GitSyncs
// that name it, which are requeued (watchDependents).
//
// Dependencies in another namespace are allowed. Their condition message is
// not copied (it is another tenant's to read): only its name, whether it
// exists and its Ready reason are.
//
// A dependsOn readyExpr (CEL, package health/rules) replaces the Ready
// check of its dependency: it reads the dependency as dep and the
// dependent as self. It is refused for another namespace's GitSync (a
// boolean oracle on another tenant's object), and a readyExpr that does
// not compile or fails to evaluate stalls the dependent with
// HealthCheckInvalid. Dependents are requeued when a dependency's
// generation, Ready condition or lastAppliedRevision changes, so an
// expression reading other status fields is looked at again at the
// latest at the dependent's interval.

// maxDependencyWalk bounds the GitSyncs read while looking for a cycle.
const maxDependencyWalk = 1000

// maxDependencyMessage bounds the part of a same-namespace dependency's
// Ready message quoted in its dependent's.
const maxDependencyMessage = 200

// dependencyKeys returns the GitSyncs gs depends on, in spec order.
func dependencyKeys(gs *v1.GitSync) []types.NamespacedName {
	keys := make([]types.NamespacedName, 0, len(gs.Spec.DependsOn))
	for _, d := range gs.Spec.DependsOn {
		ns := d.Namespace
		if ns == "" {
			ns = gs.Namespace
		}
		keys = append(keys, types.NamespacedName{Namespace: ns, Name: d.Name})
	}
	return keys
}

// syncOrHold runs the sync of gs unless its dependencies hold it back.
func (r *GitSyncReconciler) syncOrHold(ctx context.Context, gs *v1.GitSync, st *syncState) *outcome {
	if out := r.holdForDependencies(ctx, gs); out != nil {
		return out
	}
	return r.sync(ctx, gs, st)
}

// holdForDependencies returns the outcome of a GitSync its dependencies
// hold back (a cycle, or one not Ready), nil when none does.
func (r *GitSyncReconciler) holdForDependencies(ctx context.Context, gs *v1.GitSync) *outcome {
	if len(gs.Spec.DependsOn) == 0 {
		return nil
	}
	if cycle := r.dependencyCycle(ctx, gs); cycle != "" {
		return &outcome{err: stalled(v1.ReasonDependencyCycle, fmt.Errorf("spec.dependsOn leads back to this GitSync: %s", cycle))}
	}
	var why []string
	for i, key := range dependencyKeys(gs) {
		reason, err := r.dependencyNotReady(ctx, gs, i, key)
		if err != nil {
			return &outcome{err: err}
		}
		if reason != "" {
			why = append(why, reason)
		}
	}
	if len(why) == 0 {
		return nil
	}
	return &outcome{
		waiting:    "Waiting for dependencies: " + strings.Join(why, "; "),
		waitReason: v1.ReasonDependencyNotReady,
		// A readiness change of a dependency requeues gs at once; the
		// interval only backs up an event this agent cannot see.
		recheck: intervalOf(gs),
	}
}

// dependencyNotReady says why the GitSync key, spec.dependsOn[i] of gs, is
// not a ready dependency; empty when it is. A readyExpr that cannot be
// compiled or evaluated is a Stalled error.
func (r *GitSyncReconciler) dependencyNotReady(ctx context.Context, gs *v1.GitSync, i int, key types.NamespacedName) (string, error) {
	readyExpr := gs.Spec.DependsOn[i].ReadyExpr
	if readyExpr != "" && key.Namespace != gs.Namespace {
		return "", stalled(v1.ReasonHealthCheckInvalid, fmt.Errorf("spec.dependsOn[%d].readyExpr: %s is in another namespace: a readyExpr may read only GitSyncs of this namespace", i, key))
	}
	dep := &v1.GitSync{}
	if err := r.client.Get(ctx, key, dep); err != nil {
		if apierrors.IsNotFound(err) {
			return key.String() + " does not exist", nil
		}
		// A namespace outside the agent's cache, typically.
		return fmt.Sprintf("%s cannot be read: %v", key, err), nil
	}
	ready := meta.FindStatusCondition(dep.Status.Conditions, v1.ConditionReady)
	switch {
	case !dep.DeletionTimestamp.IsZero():
		return key.String() + " is being deleted", nil
	case readyExpr != "":
		return r.readyByExpr(ctx, gs, i, dep)
	case dep.Spec.Suspend && dep.Status.LastAppliedRevision == "":
		return key.String() + " is suspended and has applied no revision", nil
	case ready == nil || dep.Status.ObservedGeneration != dep.Generation || ready.ObservedGeneration != dep.Generation:
		return key.String() + " has not been reconciled at its current generation yet", nil
	case ready.Status != metav1.ConditionTrue:
		return notReadyMessage(gs.Namespace, key, ready), nil
	}
	return "", nil
}

// readyByExpr judges dep, spec.dependsOn[i] of gs, by its readyExpr (in
// place of its Ready condition): empty when it is true.
func (r *GitSyncReconciler) readyByExpr(ctx context.Context, gs *v1.GitSync, i int, dep *v1.GitSync) (string, error) {
	field := fmt.Sprintf("spec.dependsOn[%d].readyExpr", i)
	expr, err := r.healthSets.ReadyExpr(gs.Spec.DependsOn[i].ReadyExpr)
	if err != nil {
		return "", stalled(v1.ReasonHealthCheckInvalid, fmt.Errorf("%s: %w", field, err))
	}
	depMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(dep)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	selfMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(gs)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	ok, missing, err := expr.Ready(ctx, depMap, selfMap)
	switch {
	case err != nil:
		return "", stalled(v1.ReasonHealthCheckInvalid, fmt.Errorf("%s on %s: %w", field, client.ObjectKeyFromObject(dep), err))
	case missing != "":
		return fmt.Sprintf("%s: its readyExpr is not true yet (%s)", client.ObjectKeyFromObject(dep), missing), nil
	case !ok:
		return fmt.Sprintf("%s: its readyExpr is not true yet", client.ObjectKeyFromObject(dep)), nil
	}
	return "", nil
}

// notReadyMessage names a dependency that is not Ready and its reason; the
// message too (its first line, shortened) when it is in the dependent's
// own namespace.
func notReadyMessage(ns string, key types.NamespacedName, ready *metav1.Condition) string {
	if key.Namespace != ns {
		return fmt.Sprintf("%s is not Ready (%s)", key, ready.Reason)
	}
	msg, _, _ := strings.Cut(ready.Message, "\n")
	if len(msg) > maxDependencyMessage {
		msg = msg[:maxDependencyMessage] + "…"
	}
	return fmt.Sprintf("%s is not Ready (%s): %s", key, ready.Reason, msg)
}

// dependencyCycle returns the dependsOn chain that leads from gs back to
// gs ("a/x -> b/y -> a/x"), empty when there is none. It follows
// dependsOn depth-first through the cache, each GitSync once.
func (r *GitSyncReconciler) dependencyCycle(ctx context.Context, gs *v1.GitSync) string {
	start := client.ObjectKeyFromObject(gs)
	seen := map[types.NamespacedName]bool{start: true}
	var path []types.NamespacedName
	var visit func(g *v1.GitSync) bool
	visit = func(g *v1.GitSync) bool {
		for _, key := range dependencyKeys(g) {
			if key == start {
				path = append(path, key)
				return true
			}
			if seen[key] || len(seen) >= maxDependencyWalk {
				continue
			}
			seen[key] = true
			dep := &v1.GitSync{}
			if r.client.Get(ctx, key, dep) != nil {
				continue // missing: reported as not ready
			}
			path = append(path, key)
			if visit(dep) {
				return true
			}
			path = path[:len(path)-1]
		}
		return false
	}
	if !visit(gs) {
		return ""
	}
	names := []string{start.String()}
	for _, key := range path {
		names = append(names, key.String())
	}
	return strings.Join(names, " -> ")
}

// watchDependents indexes GitSyncs by their dependencies and requeues the
// dependents of a GitSync whose readiness (or dependsOn) changed, or which
// was created or deleted.
func (r *GitSyncReconciler) watchDependents(mgr manager.Manager, c controller.Controller) error {
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1.GitSync{}, v1.IndexDependsOn, func(o client.Object) []string {
		gs, ok := o.(*v1.GitSync)
		if !ok {
			return nil
		}
		keys := dependencyKeys(gs)
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = k.String()
		}
		return out
	})
	if err != nil {
		return fmt.Errorf("index GitSyncs by spec.dependsOn: %w", err)
	}
	return c.Watch(crsource.Kind(mgr.GetCache(), &v1.GitSync{},
		handler.TypedEnqueueRequestsFromMapFunc(r.dependents),
		predicate.TypedFuncs[*v1.GitSync]{
			UpdateFunc: func(e event.TypedUpdateEvent[*v1.GitSync]) bool {
				return readiness(e.ObjectOld) != readiness(e.ObjectNew)
			},
			GenericFunc: func(event.TypedGenericEvent[*v1.GitSync]) bool { return false },
		}))
}

// dependents lists the GitSyncs whose spec.dependsOn names gs.
func (r *GitSyncReconciler) dependents(ctx context.Context, gs *v1.GitSync) []reconcile.Request {
	list := &v1.GitSyncList{}
	key := client.ObjectKeyFromObject(gs).String()
	if err := r.client.List(ctx, list, client.MatchingFields{v1.IndexDependsOn: key}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// dependencyState is what a dependent's check reads of a GitSync; a change
// of it requeues the dependents.
type dependencyState struct {
	generation, observed, readyGeneration int64
	deleting, suspended, applied          bool
	ready, reason, message                string
	// appliedRevision is what a readyExpr most often reads besides Ready.
	appliedRevision string
}

func readiness(gs *v1.GitSync) dependencyState {
	s := dependencyState{
		generation: gs.Generation, observed: gs.Status.ObservedGeneration,
		deleting: !gs.DeletionTimestamp.IsZero(), suspended: gs.Spec.Suspend, applied: gs.Status.LastAppliedRevision != "",
		appliedRevision: gs.Status.LastAppliedRevision,
	}
	if c := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReady); c != nil {
		s.readyGeneration, s.ready, s.reason, s.message = c.ObservedGeneration, string(c.Status), c.Reason, c.Message
	}
	return s
}

// progressReason reports whether a Ready=False reason means progress, not
// failure: its event is Normal, and the Ready that follows is no recovery.
func progressReason(reason string) bool {
	return reason == v1.ReasonWaitingForHealth || reason == v1.ReasonDependencyNotReady
}

// waitingReason is the reason of a waiting outcome's conditions.
func (o *outcome) waitingReason() string {
	if o.waitReason != "" {
		return o.waitReason
	}
	return v1.ReasonWaitingForHealth
}
