package inventory

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/object"
)

// FinalizerOptions configure DecideFinalizer.
type FinalizerOptions struct {
	// Timeout bounds how long a deleted GitSync waits for its inventory to
	// be cleaned up, so it never stays Terminating forever.
	Timeout time.Duration
	// RetryInterval is the longest wait between cleanup attempts.
	RetryInterval time.Duration
	// MaxListed bounds the objects named in a message; the rest are counted.
	MaxListed int
	// Clock tells the time; tests use a fake one.
	Clock clock.PassiveClock
}

// DefaultFinalizerOptions waits five minutes, retrying every ten seconds.
func DefaultFinalizerOptions() FinalizerOptions {
	return FinalizerOptions{Timeout: 5 * time.Minute, RetryInterval: 10 * time.Second, MaxListed: 10, Clock: clock.RealClock{}}
}

// FinalizerState is what the controller knows after one cleanup attempt.
type FinalizerState struct {
	// Since is when deletion was requested (the GitSync's deletionTimestamp).
	Since time.Time
	// Remaining are the objects not yet pruned or orphaned: the attempt's
	// PruneResult.Remaining, or the whole inventory when the attempt could
	// not even start.
	Remaining *Inventory
	// Err is the attempt's error, if any.
	Err error
}

// FinalizerDecision says whether to remove the finalizer now, and why.
type FinalizerDecision struct {
	// Release means remove the finalizer now.
	Release bool
	// Reason and Message are for the condition and the event.
	Reason, Message string
	// RequeueAfter is when to try again when not released.
	RequeueAfter time.Duration
	// Orphaned are the objects left behind by a timed-out release.
	Orphaned []object.ID
}

// DecideFinalizer is the finalizer policy: release once nothing remains;
// otherwise wait and retry until Timeout after Since, then release anyway,
// saying why (unreachable target, forbidden, objects that would not go) and
// which objects were orphaned.
func DecideFinalizer(opts FinalizerOptions, s FinalizerState) FinalizerDecision {
	if s.Remaining.Len() == 0 {
		return FinalizerDecision{Release: true, Reason: v1.ReasonCleanedUp, Message: "inventory cleaned up"}
	}
	ids := s.Remaining.IDs()
	cause := causeOf(s.Err)
	deadline := s.Since.Add(opts.Timeout)
	now := opts.Clock.Now()
	if now.Before(deadline) {
		wait := deadline.Sub(now)
		if opts.RetryInterval > 0 && opts.RetryInterval < wait {
			wait = opts.RetryInterval
		}
		return FinalizerDecision{
			Reason:       v1.ReasonCleaningUp,
			Message:      fmt.Sprintf("waiting for %s: %s; giving up at %s", cause, listIDs(ids, opts.MaxListed), deadline.UTC().Format(time.RFC3339)),
			RequeueAfter: wait,
		}
	}
	return FinalizerDecision{
		Release:  true,
		Reason:   v1.ReasonTimedOut,
		Message:  fmt.Sprintf("finalizer released after %s (%s); orphaned %s", opts.Timeout, cause, listIDs(ids, opts.MaxListed)),
		Orphaned: ids,
	}
}

// causeOf names why cleanup did not finish, without echoing the error
// (which may carry addresses): the controller logs the error itself.
func causeOf(err error) string {
	var netErr net.Error
	switch {
	case err == nil:
		return "objects to be deleted"
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return "access to the target cluster (forbidden)"
	case errors.Is(err, ErrNotGone):
		return "objects held by finalizers"
	case errors.Is(err, ErrPruneLimit):
		return fmt.Sprintf("the prune limit: deleting this many objects at once needs the annotation %s=1 on the GitSync (or deletionPolicy: Orphan)", v1.AnnotationPruneMaxShare)
	case errors.Is(err, ErrKindNotServed):
		return "kinds that are not served (unknown, not absent)"
	case errors.As(err, &netErr), apierrors.IsServiceUnavailable(err), apierrors.IsTimeout(err),
		apierrors.IsServerTimeout(err), errors.Is(err, context.DeadlineExceeded):
		return "the target cluster (unreachable)"
	default:
		return "objects that failed to delete"
	}
}

// listIDs names up to max objects and counts the rest.
func listIDs(ids []object.ID, max int) string {
	if max <= 0 {
		max = len(ids)
	}
	names := make([]string, 0, min(len(ids), max))
	for _, id := range ids[:min(len(ids), max)] {
		names = append(names, id.String())
	}
	s := fmt.Sprintf("%d object(s): %s", len(ids), strings.Join(names, ", "))
	if len(ids) > max {
		s += fmt.Sprintf(" and %d more", len(ids)-max)
	}
	return s
}
