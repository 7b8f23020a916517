package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// TestTransitionOf: what a pass's Ready condition before and after the
// status write is worth telling.
func TestTransitionOf(t *testing.T) {
	cond := func(s metav1.ConditionStatus, reason string) *metav1.Condition {
		return &metav1.Condition{Type: v1.ConditionReady, Status: s, Reason: reason}
	}
	ready := cond(metav1.ConditionTrue, v1.ReasonSucceeded)
	applyFailed := cond(metav1.ConditionFalse, v1.ReasonApplyFailed)
	fetchFailed := cond(metav1.ConditionFalse, v1.ReasonFetchFailed)
	waiting := cond(metav1.ConditionFalse, v1.ReasonWaitingForHealth)
	for _, tc := range []struct {
		name              string
		before, after     *metav1.Condition
		revision, changed bool
		want              v1.NotificationEvent // "": nothing
	}{
		{name: "first sync Ready", after: ready, revision: true, changed: true, want: v1.NotifyReady},
		{name: "converged", before: ready, after: ready},
		{name: "new revision that changed objects", before: ready, after: ready, revision: true, changed: true, want: v1.NotifyReady},
		{name: "new revision that changed nothing", before: ready, after: ready, revision: true},
		{name: "drift repaired on the same revision", before: ready, after: ready, changed: true},
		{name: "failure", before: ready, after: applyFailed, want: v1.NotifyFailed},
		{name: "first sync failing", after: fetchFailed, want: v1.NotifyFailed},
		{name: "retry failing the same way", before: applyFailed, after: applyFailed},
		{name: "failing another way", before: applyFailed, after: fetchFailed, want: v1.NotifyFailed},
		{name: "recovery", before: applyFailed, after: ready, want: v1.NotifyRecovered},
		{name: "waiting for health", before: ready, after: waiting},
		{name: "end of a wait", before: waiting, after: ready, revision: true, want: v1.NotifyReady},
		{name: "failure after a wait", before: waiting, after: applyFailed, want: v1.NotifyFailed},
		{name: "no condition", before: ready},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := transitionOf(tc.before, tc.after, tc.revision, tc.changed)
			if ok != (tc.want != "") || got != tc.want {
				t.Errorf("transitionOf = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}
