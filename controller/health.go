package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/health"
	"gitsync.dev/gitsync/health/rules"
)

// A GitSync with spec.wait is not Ready until the objects of its revision
// are ready (kstatus Current). The reconcile that applied them never waits:
// it reads their health from the watch cache once, reports the GitSync as
// Reconciling (v1.ReasonWaitingForHealth) and returns. While the GitSync waits,
// status changes of its objects requeue it (driftPredicate), and the next
// reconcile looks again; spec.timeout after the revision was first applied
// it is Stalled with the objects that are not ready. A new revision, a spec
// change or suspend is just the next reconcile: nothing holds a worker.

// CEL health rules (spec.healthChecks over the operator's
// Options.HealthRules) judge the kinds they name wherever health is
// judged here: the wait, the wave gate, and so the readiness dependents
// see. A rule set is compiled once (r.healthSets); one that does not
// compile, or a rule that fails to evaluate on an object, stalls the
// GitSync with reason HealthCheckInvalid naming the rule: a broken rule
// never judges an object ready. A new spec (a fixed rule) is the next
// reconcile.

// maxHealthRuleSets bounds the compiled rule sets the agent keeps: one per
// distinct spec.healthChecks, and GitSyncs without any share the
// operator's set.
const maxHealthRuleSets = 1024

// healthRules returns the compiled rules that judge gs's objects: nil when
// there are none; a Stalled error when they do not compile.
func (r *GitSyncReconciler) healthRules(gs *v1.GitSync) (health.Rules, error) {
	err := rules.Duplicate(gs.Spec.HealthChecks)
	set, cerr := r.healthSets.Compile(rules.Merge(r.opts.HealthRules, gs.Spec.HealthChecks))
	if err = errors.Join(err, cerr); err != nil {
		return nil, stalled(v1.ReasonHealthCheckInvalid, fmt.Errorf("spec.healthChecks: %w", err))
	}
	if set == nil {
		return nil, nil // a nil *Set in the interface would still be checked
	}
	return set, nil
}

// healthWait is the wait of one revision under one spec generation.
type healthWait struct {
	commit string
	gen    int64
	since  time.Time
}

// healthJudge judges the health of one sync's objects: each object the
// sync created or configured as the apiserver answered its write
// (apply.Applier.WithWritten), each one left unchanged as the watch cache
// holds it. The answer to a write is the object as that write stored it,
// which is what the write's watch event will bring: judging it at once
// decides what the reconcile that event requeues would decide, without
// waiting for the event and then, behind other GitSyncs' syncs, for a
// worker. An object its controller has still to act on says so there as
// anywhere (a generation ahead of status.observedGeneration, no status).
type healthJudge struct {
	rules health.Rules
	// written is indexed like the sync's objects; each index is written
	// by the one apply worker that wrote that object.
	written []writeVerdict
	// live is where objects the sync left unchanged are read: the watch
	// cache, or the sync's livecache.Reader (preflight).
	live client.Reader
}

// writeVerdict is the health of one written object.
type writeVerdict struct {
	seen bool
	res  health.Result
	err  error
}

func newHealthJudge(objects int, hr health.Rules, live client.Reader) *healthJudge {
	return &healthJudge{rules: hr, written: make([]writeVerdict, objects), live: live}
}

// observe is the applier's WithWritten function.
func (j *healthJudge) observe(ctx context.Context, i int, live *unstructured.Unstructured) {
	if i < 0 || i >= len(j.written) {
		return
	}
	res, err := health.CheckWith(ctx, live, j.rules)
	j.written[i] = writeVerdict{seen: true, res: res, err: err}
}

// pending returns the objects of a successful apply that are not Current.
// A written object whose answer was not seen is not Current yet whatever
// the cache holds: the cache may not have the write yet. The watch event
// of that write requeues the GitSync, whose next reconcile finds the
// object unchanged and reads its health. A health rule that fails to
// evaluate is a Stalled error.
func (j *healthJudge) pending(ctx context.Context, objs []*unstructured.Unstructured, cs *apply.ChangeSet) ([]health.Result, error) {
	if cs == nil {
		return nil, nil
	}
	var pending []health.Result
	for i, e := range cs.Entries {
		if i >= len(objs) {
			break
		}
		var v writeVerdict
		switch e.Action {
		case apply.Created, apply.Configured:
			if i < len(j.written) {
				v = j.written[i]
			}
			if !v.seen {
				pending = append(pending, health.Result{ID: e.ID, Status: health.InProgress, Message: "just applied"})
				continue
			}
		case apply.Unchanged:
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(objs[i].GroupVersionKind())
			err := j.live.Get(ctx, client.ObjectKey{Namespace: e.ID.Namespace, Name: e.ID.Name}, u)
			if apierrors.IsNotFound(err) {
				pending = append(pending, health.Result{ID: e.ID, Status: health.NotFound, Message: "not found"})
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s health check failed: %w", e.Subject, err)
			}
			v.res, v.err = health.CheckWith(ctx, u, j.rules)
		default:
			continue // not applied: the sync failed and is reported as such
		}
		if re := (*health.RuleError)(nil); errors.As(v.err, &re) {
			return nil, stalled(v1.ReasonHealthCheckInvalid, v.err)
		}
		if v.err != nil {
			return nil, v.err
		}
		if v.res.Status != health.Current {
			pending = append(pending, v.res)
		}
	}
	return pending, nil
}

// healthError classifies a failure to read health: a broken rule is
// Stalled already, anything else (a cache read) is retried.
func healthError(err error) error {
	if se := (*syncError)(nil); errors.As(err, &se) {
		return err
	}
	return retry(v1.ReasonHealthCheckFailed, err)
}

// judgeHealth turns the objects not yet ready into the state of the wait:
// nil error and an empty message when all are ready; a message naming them
// while the wait lasts; a Stalled error when one Failed or the wait is
// older than timeout.
func judgeHealth(pending []health.Result, waited, timeout time.Duration) (string, error) {
	var failed []health.Result
	for _, p := range pending {
		if p.Status == health.Failed {
			failed = append(failed, p)
		}
	}
	switch {
	case len(pending) == 0:
		return "", nil
	case len(failed) > 0:
		return "", stalled(v1.ReasonHealthCheckFailed, fmt.Errorf("health check failed: %w", &health.FailedError{Failed: failed}))
	case waited >= timeout:
		return "", stalled(v1.ReasonHealthCheckFailed, fmt.Errorf("health check failed: %w", &health.TimeoutError{Timeout: timeout, Pending: pending}))
	}
	return waitingMessage(pending), nil
}

// waitingMessage names the objects not ready, with their kstatus status but
// not its message (replica counts would rewrite the status on every step
// of a rollout).
func waitingMessage(pending []health.Result) string {
	const show = 10
	names := make([]string, 0, min(len(pending), show))
	for _, p := range pending[:min(len(pending), show)] {
		names = append(names, fmt.Sprintf("%s (%s)", p.ID, p.Status))
	}
	more := ""
	if len(pending) > show {
		more = fmt.Sprintf(" and %d more", len(pending)-show)
	}
	noun := "objects"
	if len(pending) == 1 {
		noun = "object"
	}
	return fmt.Sprintf("Waiting for %d %s to become ready: %s%s", len(pending), noun, strings.Join(names, ", "), more)
}
