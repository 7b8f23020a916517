package apply

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestSummary(t *testing.T) {
	tests := []struct {
		name    string
		actions []Action
		want    string
	}{
		{name: "empty", want: "no objects"},
		{name: "mixed, in fixed order", actions: []Action{Failed, Unchanged, Created, Created, Configured, Unchanged}, want: "2 created, 1 configured, 2 unchanged, 1 failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cs ChangeSet
			for _, a := range tt.actions {
				cs.Add(Entry{Action: a})
			}
			if got := cs.Summary(); got != tt.want {
				t.Errorf("Summary() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestErrReportsFailedAndSkipped(t *testing.T) {
	tests := []struct {
		name    string
		entries []Entry
		want    []string // substrings of Err(); nil means Err() is nil
	}{
		{name: "all applied", entries: []Entry{{Subject: "A", Action: Created}, {Subject: "B", Action: Unchanged}}},
		{name: "a failed entry", entries: []Entry{{Subject: "A", Action: Failed, Err: errors.New("A apply failed: boom")}}, want: []string{"A apply failed: boom"}},
		{
			name:    "a skipped entry alone is not success",
			entries: []Entry{{Subject: "Widget/ns/w", Action: Skipped, Err: errors.New("Widget/ns/w skipped: kind not served")}, {Subject: "B", Action: Created}},
			want:    []string{"Widget/ns/w skipped: kind not served"},
		},
		{name: "skipped without a reason", entries: []Entry{{Subject: "W", Action: Skipped}}, want: []string{"W skipped"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cs ChangeSet
			for _, e := range tt.entries {
				cs.Add(e)
			}
			err := cs.Err()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Err() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Err() = nil, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Err() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestAsConflict(t *testing.T) {
	err := apierrors.NewApplyConflict([]metav1.StatusCause{
		{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl-edit" using v1`, Field: ".data.a"},
		{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "hpa" with subresource "scale"`, Field: ".spec.replicas"},
		{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl-edit" using v1 at 2024-01-01T00:00:00Z`, Field: ".data.b"},
	}, "Apply failed with 3 conflicts")
	ce := asConflict(err)
	if ce == nil {
		t.Fatal("not recognised as a conflict")
	}
	if d := cmp.Diff([]string{"hpa", "kubectl-edit"}, ce.Managers()); d != "" {
		t.Errorf("Managers (-want +got):\n%s", d)
	}
	want := `conflict with field manager "hpa" owns .spec.replicas; "kubectl-edit" owns .data.a, .data.b (set force to take ownership)`
	if got := ce.Error(); got != want {
		t.Errorf("Error() = %q\nwant      %q", got, want)
	}
	if !errors.Is(ce, err) {
		t.Error("ConflictError does not unwrap to the apiserver error")
	}
	if asConflict(apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("rv"))) != nil {
		t.Error("an optimistic-lock conflict is not a field-manager conflict")
	}
}

func TestAsImmutable(t *testing.T) {
	err := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web", nil)
	if asImmutable(err) != nil {
		t.Error("invalid without immutable cause recognised as immutable")
	}
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: "Invalid value: ...: field is immutable", Field: "spec.selector"}}
	ie := asImmutable(err)
	if ie == nil || !cmp.Equal(ie.Fields, []string{"spec.selector"}) {
		t.Errorf("asImmutable = %+v", ie)
	}
}
