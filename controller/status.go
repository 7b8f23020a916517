package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"gitsync.dev/gitsync/internal/clip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/internal/crashpoint"
	"gitsync.dev/gitsync/inventory"
)

// maxMessage bounds condition and event messages; an apply of many failing
// objects would otherwise write a huge status.
const maxMessage = 4000

// writeStatus applies mutate to a copy of gs's status and writes it only
// when it differs, with a patch that fails on a stale resourceVersion (a
// status computed from an old read never clobbers a newer one).
func (r *GitSyncReconciler) writeStatus(ctx context.Context, gs *v1.GitSync, st *syncState, mutate func(*v1.GitSyncStatus)) error {
	next := gs.DeepCopy()
	mutate(&next.Status)
	if equality.Semantic.DeepEqual(gs.Status, next.Status) {
		r.opts.Metrics.SetStatus(gs) // after a restart, the series start from the stored status
		return nil
	}
	patch := client.MergeFromWithOptions(gs, client.MergeFromWithOptimisticLock{})
	if err := r.client.Status().Patch(ctx, next, patch); err != nil {
		return &statusWriteError{fmt.Errorf("GitSync/%s/%s status update failed: %w", gs.Namespace, gs.Name, err)}
	}
	st.wrote(gs.ResourceVersion)
	next.DeepCopyInto(gs)
	r.opts.Metrics.SetStatus(gs)
	return nil
}

// writeSuspended reports a suspended GitSync: Ready with reason Suspended
// (nothing is applied, pruned or repaired until spec.suspend is unset) and
// no Reconciling or Stalled, since no sync is pending.
func (r *GitSyncReconciler) writeSuspended(ctx context.Context, gs *v1.GitSync, st *syncState) error {
	msg := "spec.suspend is set: nothing is applied, pruned or repaired"
	if rev := gs.Status.LastAppliedRevision; rev != "" {
		msg += "; last applied revision " + rev
	}
	before := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReady).DeepCopy()
	err := r.writeStatus(ctx, gs, st, func(s *v1.GitSyncStatus) {
		s.ObservedGeneration = gs.Generation
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionTrue,
			Reason: v1.ReasonSuspended, Message: msg, ObservedGeneration: gs.Generation})
		meta.RemoveStatusCondition(&s.Conditions, v1.ConditionReconciling)
		meta.RemoveStatusCondition(&s.Conditions, v1.ConditionStalled)
	})
	if err == nil {
		noteOutcome(ctx, gs, before, nil)
	}
	return err
}

// statusWriteError is a failed write of a GitSync's status.
type statusWriteError struct{ error }

func (e *statusWriteError) Unwrap() error { return e.error }

// outdatedWrite reports whether err is a status write refused because the
// GitSync changed since it was read: the next reconcile reads it again.
func outdatedWrite(err error) bool {
	var we *statusWriteError
	return errors.As(err, &we) && apierrors.IsConflict(we)
}

// report writes what a sync did into status and emits events for what
// changed: objects applied or pruned, failure started or changed, recovery.
// A sync that failed only because one of its status writes met a newer
// GitSync is not reported: done retries it with a fresh read.
func (r *GitSyncReconciler) report(ctx context.Context, gs *v1.GitSync, st *syncState, out *outcome) error {
	if outdatedWrite(out.err) {
		return out.err
	}
	crashpoint.Hit(crashpoint.BeforeStatus)
	before := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReady).DeepCopy()
	driftBefore := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionDrifted).DeepCopy()
	prevApplied := gs.Status.LastAppliedRevision
	err := r.writeStatus(ctx, gs, st, func(s *v1.GitSyncStatus) {
		s.ObservedGeneration = gs.Generation
		if out.attempted != "" {
			s.LastAttemptedRevision = out.attempted
		}
		if out.applied != "" && out.applied != s.LastAppliedRevision {
			now := metav1.NewTime(r.clock.Now()).Rfc3339Copy()
			s.LastAppliedRevision, s.LastAppliedTime = out.applied, &now
		}
		if out.applied != "" {
			s.LastAppliedSigner = out.signer
		}
		if out.inventory != nil {
			s.Inventory = inventory.ToGitSyncStatus(out.inventory)
		}
		s.LastHandledRequestedAt = gs.Annotations[v1.AnnotationRequestedAt]
		recordHistory(s, out, r.clock.Now())
		setConditions(s, gs.Generation, out)
		setDrifted(s, gs.Generation, out)
	})
	if err != nil {
		return err
	}
	r.opts.Metrics.SetRevision(client.ObjectKeyFromObject(gs), gs.Status.LastAppliedRevision)
	r.opts.Metrics.SetDrifted(client.ObjectKeyFromObject(gs), out.driftedChanges())
	r.emit(gs, before, prevApplied, out)
	r.notifyTransition(gs, before, prevApplied, out)
	r.emitDrift(gs, driftBefore)
	noteOutcome(ctx, gs, before, out)
	return nil
}

// setConditions sets Ready, Reconciling and Stalled the kstatus way: Ready
// is the summary; Stalled means retrying will not help; Reconciling means a
// retry is pending. Messages carry no timestamps or counters that change
// from one pass to the next, so a converged GitSync writes nothing.
func setConditions(s *v1.GitSyncStatus, gen int64, out *outcome) {
	set := func(t string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: clipMessage(msg), ObservedGeneration: gen})
	}
	se := out.syncErr()
	switch {
	case se == nil && out.waiting != "":
		set(v1.ConditionReady, metav1.ConditionFalse, out.waitingReason(), out.waiting)
		set(v1.ConditionReconciling, metav1.ConditionTrue, out.waitingReason(), out.waiting)
		meta.RemoveStatusCondition(&s.Conditions, v1.ConditionStalled)
	case se == nil:
		reason, msg := readyCondition(s, out)
		set(v1.ConditionReady, metav1.ConditionTrue, reason, msg)
		meta.RemoveStatusCondition(&s.Conditions, v1.ConditionReconciling)
		meta.RemoveStatusCondition(&s.Conditions, v1.ConditionStalled)
	case se.Stalled:
		set(v1.ConditionReady, metav1.ConditionFalse, se.Reason, se.Error())
		set(v1.ConditionStalled, metav1.ConditionTrue, se.Reason, se.Error())
		meta.RemoveStatusCondition(&s.Conditions, v1.ConditionReconciling)
	default:
		set(v1.ConditionReady, metav1.ConditionFalse, se.Reason, se.Error())
		set(v1.ConditionReconciling, metav1.ConditionTrue, v1.ReasonProgressing, "Retrying: "+se.Error())
		meta.RemoveStatusCondition(&s.Conditions, v1.ConditionStalled)
	}
}

// emit records events for transitions only.
func (r *GitSyncReconciler) emit(gs *v1.GitSync, before *metav1.Condition, prevApplied string, out *outcome) {
	if note := changeNote(out); note != "" {
		r.recorder.Eventf(gs, nil, corev1.EventTypeNormal, "Applied", "Apply", "%s", clipMessage(note))
	}
	r.emitKept(gs, out.pruned)
	after := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReady)
	if after == nil {
		return
	}
	wasReady := before != nil && before.Status == metav1.ConditionTrue
	switch {
	case after.Status == metav1.ConditionFalse && (before == nil || before.Status != after.Status || before.Reason != after.Reason || before.Message != after.Message):
		typ := corev1.EventTypeWarning
		if progressReason(after.Reason) {
			typ = corev1.EventTypeNormal // progress, not a failure
		}
		r.recorder.Eventf(gs, nil, typ, after.Reason, "Reconcile", "%s", after.Message)
	case after.Status == metav1.ConditionTrue && !wasReady && before != nil && !progressReason(before.Reason):
		r.recorder.Eventf(gs, nil, corev1.EventTypeNormal, "Recovered", "Reconcile", "%s", after.Message)
	case after.Status == metav1.ConditionTrue && !wasReady && prevApplied != gs.Status.LastAppliedRevision && !out.changedObjects():
		// The end of a wait (the objects changed in an earlier pass), or a
		// first sync that found everything in place. A Ready GitSync whose
		// new revision changed nothing of its own (another path of its
		// repository moved) gets no event.
		r.recorder.Eventf(gs, nil, corev1.EventTypeNormal, "RevisionApplied", "Apply", "%s", after.Message)
	}
}

// changeNote summarises the objects a sync changed, e.g. "revision
// main@sha1:...: 1 created, 1 pruned (ConfigMap/ns/a, ConfigMap/ns/b)";
// empty when nothing changed.
func changeNote(out *outcome) string {
	var subjects []string
	counts := map[string]int{}
	var order []string
	add := func(action, subject string) {
		if counts[action] == 0 {
			order = append(order, action)
		}
		counts[action]++
		if len(subjects) < 10 {
			subjects = append(subjects, subject)
		}
	}
	out.eachChange(add)
	if len(order) == 0 {
		return ""
	}
	parts := make([]string, 0, len(order))
	for _, a := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[a], a))
	}
	return fmt.Sprintf("revision %s: %s (%s)", out.attempted, strings.Join(parts, ", "), strings.Join(subjects, ", "))
}

// changedObjects reports whether out changed any object in the cluster
// (what changeNote would tell of), without making the note.
func (out *outcome) changedObjects() bool {
	changed := false
	out.eachChange(func(string, string) { changed = true })
	return changed
}

// eachChange calls f with each object out changed in the cluster, by
// action (created, configured, pruned, orphaned) and subject
// ("Kind/namespace/name"): the changes the log, Events and notifications
// tell of.
func (out *outcome) eachChange(f func(action, subject string)) {
	if out.changes != nil {
		for _, e := range out.changes.Entries {
			if e.Action == apply.Created || e.Action == apply.Configured {
				f(string(e.Action), e.Subject)
			}
		}
	}
	if out.pruned != nil {
		for _, e := range out.pruned.Entries {
			if e.Action == inventory.ActionPruned || e.Action == inventory.ActionOrphaned {
				f(string(e.Action), e.ID.String())
			}
		}
	}
}

// maxEventNote is the longest note the apiserver takes in an Event
// (events.k8s.io/v1: 1 kB); a longer one is refused, and the Event lost.
const maxEventNote = 1024

// clippedEvents records Events with their note clipped to maxEventNote, at
// a rune boundary, so a message about many failed objects still reaches
// the Events it would otherwise be refused from.
type clippedEvents struct{ events.EventRecorder }

func (c clippedEvents) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	c.EventRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", clip.To(fmt.Sprintf(note, args...), maxEventNote))
}

// clipMessage bounds a condition's or an Event's message (maxMessage).
func clipMessage(s string) string { return clip.To(s, maxMessage) }
