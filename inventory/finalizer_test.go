package inventory

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

func TestDecideFinalizer(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	left := New(entry(cm("ns", "a"), "1"), entry(cm("ns", "b"), "2"), entry(cm("ns", "c"), "3"))
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "a", errors.New("denied"))
	tests := []struct {
		name    string
		elapsed time.Duration
		state   FinalizerState
		want    FinalizerDecision
	}{
		{
			name:    "nothing left releases at once",
			elapsed: time.Second,
			state:   FinalizerState{Remaining: New()},
			want:    FinalizerDecision{Release: true, Reason: v1.ReasonCleanedUp, Message: "inventory cleaned up"},
		},
		{
			name:    "objects left before the deadline wait",
			elapsed: time.Minute,
			state:   FinalizerState{Remaining: left, Err: objectError(cm("ns", "a"), "prune", fmt.Errorf("wait: %w", ErrNotGone))},
			want: FinalizerDecision{
				Reason:       v1.ReasonCleaningUp,
				Message:      "waiting for objects held by finalizers: 3 object(s): ConfigMap/ns/a, ConfigMap/ns/b and 1 more; giving up at 2026-01-02T03:09:05Z",
				RequeueAfter: 10 * time.Second,
			},
		},
		{
			name:    "kinds not served wait, named as unknown",
			elapsed: time.Minute,
			state:   FinalizerState{Remaining: left, Err: objectError(cm("ns", "a"), "prune", ErrKindNotServed)},
			want: FinalizerDecision{
				Reason:       v1.ReasonCleaningUp,
				Message:      "waiting for kinds that are not served (unknown, not absent): 3 object(s): ConfigMap/ns/a, ConfigMap/ns/b and 1 more; giving up at 2026-01-02T03:09:05Z",
				RequeueAfter: 10 * time.Second,
			},
		},
		{
			name:    "retry no later than the deadline",
			elapsed: 4*time.Minute + 55*time.Second,
			state:   FinalizerState{Remaining: left},
			want: FinalizerDecision{
				Reason:       v1.ReasonCleaningUp,
				Message:      "waiting for objects to be deleted: 3 object(s): ConfigMap/ns/a, ConfigMap/ns/b and 1 more; giving up at 2026-01-02T03:09:05Z",
				RequeueAfter: 5 * time.Second,
			},
		},
		{
			name:    "forbidden past the deadline releases and lists the orphans",
			elapsed: 5 * time.Minute,
			state:   FinalizerState{Remaining: left, Err: objectError(cm("ns", "a"), "prune", forbidden)},
			want: FinalizerDecision{
				Release:  true,
				Reason:   v1.ReasonTimedOut,
				Message:  "finalizer released after 5m0s (access to the target cluster (forbidden)); orphaned 3 object(s): ConfigMap/ns/a, ConfigMap/ns/b and 1 more",
				Orphaned: left.IDs(),
			},
		},
		{
			name:    "unreachable past the deadline releases",
			elapsed: time.Hour,
			state:   FinalizerState{Remaining: left, Err: apierrors.NewServiceUnavailable("down")},
			want: FinalizerDecision{
				Release:  true,
				Reason:   v1.ReasonTimedOut,
				Message:  "finalizer released after 5m0s (the target cluster (unreachable)); orphaned 3 object(s): ConfigMap/ns/a, ConfigMap/ns/b and 1 more",
				Orphaned: left.IDs(),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultFinalizerOptions()
			opts.MaxListed = 2
			opts.Clock = clocktesting.NewFakePassiveClock(since.Add(tt.elapsed))
			tt.state.Since = since
			if diff := cmp.Diff(tt.want, DecideFinalizer(opts, tt.state)); diff != "" {
				t.Errorf("DecideFinalizer (-want +got):\n%s", diff)
			}
		})
	}
}
