package controller

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/crashpoint"
	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/metrics"
)

// finalize cleans up a deleted GitSync's objects per spec.deletionPolicy
// and then releases the finalizer. Cleanup that keeps failing is retried
// until Options.FinalizeTimeout after the deletion, then the finalizer is
// released anyway and the objects left behind are named in an event, so a
// GitSync never stays Terminating forever.
func (r *GitSyncReconciler) finalize(ctx context.Context, gs *v1.GitSync, st *syncState) (metrics.Result, ctrl.Result, error) {
	key := client.ObjectKeyFromObject(gs)
	if !controllerutil.ContainsFinalizer(gs, v1.Finalizer) {
		r.forget(key)
		return metrics.Deleted, ctrl.Result{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeoutOf(gs))
	defer cancel()
	res, remaining, err := r.cleanup(ctx, gs)
	dec := inventory.DecideFinalizer(inventory.FinalizerOptions{
		Timeout:       r.opts.FinalizeTimeout,
		RetryInterval: min(retryIntervalOf(gs), r.opts.FinalizeTimeout),
		MaxListed:     10,
		Clock:         clock.RealClock{},
	}, inventory.FinalizerState{Since: gs.DeletionTimestamp.Time, Remaining: remaining, Err: err})
	if !dec.Release {
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "cleanup of deleted GitSync failed; retrying")
		}
		serr := r.writeStatus(ctx, gs, st, func(s *v1.GitSyncStatus) {
			s.Inventory = inventory.ToGitSyncStatus(remaining)
			meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionFalse,
				Reason: dec.Reason, Message: clipMessage(dec.Message), ObservedGeneration: gs.Generation})
		})
		return metrics.Retry, ctrl.Result{RequeueAfter: dec.RequeueAfter}, serr
	}
	crashpoint.Hit(crashpoint.InFinalizer)
	if dec.Reason == v1.ReasonTimedOut {
		r.recorder.Eventf(gs, nil, corev1.EventTypeWarning, dec.Reason, "Finalize", "%s", clipMessage(dec.Message))
	} else if note := changeNote(&outcome{pruned: res, attempted: gs.Status.LastAppliedRevision}); note != "" {
		r.recorder.Eventf(gs, nil, corev1.EventTypeNormal, string(gs.Spec.DeletionPolicy), "Finalize", "%s", clipMessage(note))
	}
	if err := r.patchMeta(ctx, gs, st, func() { controllerutil.RemoveFinalizer(gs, v1.Finalizer) }); err != nil {
		return metrics.Retry, ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.forget(key)
	return metrics.Deleted, ctrl.Result{}, nil
}

// cleanup prunes or orphans gs's inventory and returns what remains.
func (r *GitSyncReconciler) cleanup(ctx context.Context, gs *v1.GitSync) (*inventory.PruneResult, *inventory.Inventory, error) {
	inv, err := inventory.FromGitSyncStatus(gs)
	if err != nil || inv.Len() == 0 {
		return nil, inventory.New(), err
	}
	tgt, err := r.target(ctx, r.reader.For(gs, nil), gs, false)
	if err != nil {
		return nil, inv, err
	}
	if gs.Spec.DeletionPolicy == v1.DeletionPolicyOrphan {
		res, err := inventory.Orphan(ctx, tgt.Client, inv, gs.Name, gs.Namespace)
		if res == nil {
			return nil, inv, err
		}
		return res, res.Remaining, err
	}
	rails, err := r.pruneRails(gs)
	if err != nil {
		return nil, inv, err
	}
	opts := rails.ForDeletion()
	plan, err := inventory.Plan(ctx, tgt.Client, inv, inventory.New(), opts)
	if err != nil {
		return nil, inv, err
	}
	res, err := plan.Execute(ctx, tgt.Client)
	if res == nil {
		return nil, inv, errors.Join(err, errors.New("prune returned no result"))
	}
	r.opts.Metrics.ObservePruned(res.Count(inventory.ActionPruned))
	return res, res.Remaining, err
}
