package controller

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/metrics"
)

// A reconcile logs one line when it changed something or failed, and
// nothing when it found the GitSync in sync. A Stalled GitSync is logged
// when its reason or message changes, not at every look; a sync retried
// after a transient failure is logged at every failure (the backoff bounds
// how often). controller-runtime's own "Reconciler error" line for a
// failure already logged here is dropped by WithoutReportedErrors.

// reportKey holds a reconcile's *report in its context.
type reportKey struct{}

// report is what one reconcile wrote to status, kept for its log line.
type report struct {
	before, after *metav1.Condition // Ready before and after
	revision      string            // attempted, else last applied
	out           *outcome          // nil when the GitSync is suspended
	set           bool
}

// withReport returns ctx carrying an empty report for noteOutcome to fill.
func withReport(ctx context.Context) context.Context {
	return context.WithValue(ctx, reportKey{}, &report{})
}

// noteOutcome records, for the reconcile's log line, the Ready condition
// before and after a status write and the sync's outcome.
func noteOutcome(ctx context.Context, gs *v1.GitSync, before *metav1.Condition, out *outcome) {
	rep, _ := ctx.Value(reportKey{}).(*report)
	if rep == nil {
		return
	}
	rep.before, rep.out, rep.set = before, out, true
	rep.after = meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReady).DeepCopy()
	rep.revision = gs.Status.LastAppliedRevision
	if out != nil && out.attempted != "" {
		rep.revision = out.attempted
	}
}

// done ends a reconcile: it records its duration, logs its outcome, and
// turns an optimistic-concurrency conflict (a write based on a read the
// cache had not refreshed yet) into a quiet retry instead of an error.
func (r *GitSyncReconciler) done(ctx context.Context, gs *v1.GitSync, result metrics.Result, d time.Duration, res ctrl.Result, err error) (ctrl.Result, error) {
	r.opts.Metrics.ObserveReconcile(result, d)
	log := ctrl.LoggerFrom(ctx)
	if apierrors.IsConflict(err) {
		log.V(1).Info("write based on an outdated GitSync; retrying", "conflict", err.Error())
		return ctrl.Result{RequeueAfter: r.opts.MinBackoff}, nil
	}
	if result == metrics.Deleted {
		log.Info("GitSync deleted", "deletionPolicy", gs.Spec.DeletionPolicy, "duration", d.Round(time.Millisecond).String())
		return res, err
	}
	rep, _ := ctx.Value(reportKey{}).(*report)
	if rep == nil || !rep.set {
		return res, err // failed before reporting: controller-runtime logs err
	}
	if rep.log(log, d) && err != nil {
		err = &loggedError{err}
	}
	return res, err
}

// log writes the line for the reconcile rep describes, if it deserves one,
// and reports whether it logged a failure.
func (rep *report) log(log logr.Logger, d time.Duration) bool {
	changed := rep.after != nil && (rep.before == nil || rep.before.Status != rep.after.Status ||
		rep.before.Reason != rep.after.Reason || rep.before.Message != rep.after.Message)
	kv := []any{"revision", rep.revision, "duration", d.Round(time.Millisecond).String()}
	if rep.after != nil {
		kv = append(kv, "reason", rep.after.Reason)
	}
	if rep.out == nil { // suspended
		if changed {
			log.Info("GitSync suspended", kv...)
		}
		return false
	}
	c := countsOf(rep.out)
	kv = append(kv, "created", c.created, "configured", c.configured, "pruned", c.pruned, "failed", c.failed)
	se := rep.out.syncErr()
	switch {
	case se == nil && (changed || c.created+c.configured+c.pruned > 0):
		log.Info("GitSync synced", append(kv, "message", rep.after.Message)...)
	case se == nil:
		log.V(1).Info("GitSync in sync", kv...)
	case se.Stalled && changed:
		log.Error(se, "GitSync stalled: retrying will not help until the source or the spec changes", kv...)
		return true
	case se.Stalled:
		log.V(1).Info("GitSync still stalled", kv...)
	default:
		log.Error(se, "GitSync sync failed; retrying", kv...)
		return true
	}
	return false
}

// counts are the objects a sync changed, by action.
type counts struct{ created, configured, pruned, failed int }

func countsOf(out *outcome) counts {
	var c counts
	if out.changes != nil {
		for _, e := range out.changes.Entries {
			switch e.Action {
			case apply.Created:
				c.created++
			case apply.Configured:
				c.configured++
			case apply.Failed:
				c.failed++
			}
		}
	}
	if out.pruned != nil {
		c.pruned = out.pruned.Count(inventory.ActionPruned)
	}
	return c
}

// loggedError marks a reconcile error the reconciler has logged already.
type loggedError struct{ error }

func (e *loggedError) Unwrap() error { return e.error }

// WithoutReportedErrors returns l without the "Reconciler error" lines
// controller-runtime writes for errors the reconciler logged itself with
// its GitSync's revision, counts and reason, so a failed sync is one line.
// Every other line, errors the reconciler did not log included, passes.
func WithoutReportedErrors(l logr.Logger) logr.Logger {
	sink := l.GetSink()
	if sink == nil {
		return l
	}
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1) // the wrapper's own frame
	}
	return logr.New(&quietSink{sink: sink})
}

// quietSink drops errors marked as logged and passes everything else.
type quietSink struct{ sink logr.LogSink }

var _ logr.LogSink = (*quietSink)(nil)

// Init does nothing: the wrapped sink was initialised by its own logger.
func (s *quietSink) Init(logr.RuntimeInfo) {}

func (s *quietSink) Enabled(level int) bool { return s.sink.Enabled(level) }

func (s *quietSink) Info(level int, msg string, kv ...any) { s.sink.Info(level, msg, kv...) }

func (s *quietSink) Error(err error, msg string, kv ...any) {
	var le *loggedError
	if errors.As(err, &le) {
		return
	}
	s.sink.Error(err, msg, kv...)
}

func (s *quietSink) WithValues(kv ...any) logr.LogSink {
	return &quietSink{sink: s.sink.WithValues(kv...)}
}

func (s *quietSink) WithName(name string) logr.LogSink {
	return &quietSink{sink: s.sink.WithName(name)}
}
