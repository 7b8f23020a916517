package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/health"
)

// A GitSync with spec.wait is not Ready until the objects of its revision
// are ready (kstatus Current). The reconcile that applied them never waits:
// it reads their health from the watch cache once, reports the GitSync as
// Reconciling (v1.ReasonWaitingForHealth) and returns. While the GitSync waits,
// status changes of its objects requeue it (driftPredicate), and the next
// reconcile looks again; spec.timeout after the revision was first applied
// it is Stalled with the objects that are not ready. A new revision, a spec
// change or suspend is just the next reconcile: nothing holds a worker.

// healthWait is the wait of one revision under one spec generation.
type healthWait struct {
	commit string
	gen    int64
	since  time.Time
}

// healthOf returns the objects of a successful apply that are not Current,
// read from the watch cache (no request). An object this run created or
// configured is not Current yet whatever the cache holds: the cache may not
// have the write yet, and its controller has not acted on it. The watch
// event of that write requeues the GitSync, whose next reconcile finds the
// object unchanged and reads its health.
func healthOf(ctx context.Context, live client.Reader, objs []*unstructured.Unstructured, cs *apply.ChangeSet) ([]health.Result, error) {
	if cs == nil {
		return nil, nil
	}
	var pending []health.Result
	for i, e := range cs.Entries {
		if i >= len(objs) {
			break
		}
		switch e.Action {
		case apply.Created, apply.Configured:
			pending = append(pending, health.Result{ID: e.ID, Status: health.InProgress, Message: "just applied"})
			continue
		case apply.Unchanged:
		default:
			continue // not applied: the sync failed and is reported as such
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(objs[i].GroupVersionKind())
		err := live.Get(ctx, client.ObjectKey{Namespace: e.ID.Namespace, Name: e.ID.Name}, u)
		if apierrors.IsNotFound(err) {
			pending = append(pending, health.Result{ID: e.ID, Status: health.NotFound, Message: "not found"})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s health check failed: %w", e.Subject, err)
		}
		res, err := health.Check(u)
		if err != nil {
			return nil, err
		}
		if res.Status != health.Current {
			pending = append(pending, res)
		}
	}
	return pending, nil
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
