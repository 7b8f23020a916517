package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestNotReadyMessage: a dependency's Ready message is quoted (first line,
// shortened) only for a dependency in the dependent's own namespace; for
// another namespace's, its name and reason are all a tenant learns.
func TestNotReadyMessage(t *testing.T) {
	ready := &metav1.Condition{Status: metav1.ConditionFalse, Reason: "ApplyFailed",
		Message: "Secret/team-b/db-creds apply failed: forbidden\nsecond line " + strings.Repeat("x", 300)}
	tests := []struct {
		name, ns string
		key      types.NamespacedName
		want     string
	}{
		{"same namespace", "team-b", types.NamespacedName{Namespace: "team-b", Name: "db"},
			"team-b/db is not Ready (ApplyFailed): Secret/team-b/db-creds apply failed: forbidden"},
		{"other namespace", "team-a", types.NamespacedName{Namespace: "team-b", Name: "db"},
			"team-b/db is not Ready (ApplyFailed)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := notReadyMessage(tt.ns, tt.key, ready); got != tt.want {
				t.Errorf("notReadyMessage = %q, want %q", got, tt.want)
			}
		})
	}
	long := &metav1.Condition{Reason: "RenderFailed", Message: strings.Repeat("y", 500)}
	got := notReadyMessage("a", types.NamespacedName{Namespace: "a", Name: "x"}, long)
	if len(got) > 260 {
		t.Errorf("message of a long dependency message is %d bytes, want it shortened", len(got))
	}
}
