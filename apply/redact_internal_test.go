package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestSafeField(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain key", "data[password]", "data[password]"},
		{"ssa path", ".stringData.db.password", ".stringData.db.password"},
		{"key with a space and colon", "data[PASSWORD: V]", "data[(key withheld)]"},
		{"ssa path with a bad key", ".stringData.PASSWORD: V", ".stringData.(key withheld)"},
		{"bad key then more", "data[a b].c", "data[(key withheld)]"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := safeField(tt.in); got != tt.want {
				t.Errorf("safeField(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestWithholdKeepsClasses checks, on errors shaped like the apiserver's,
// that the rebuilt error answers every classification question as the
// original did and no longer holds the value. The real apiserver's errors
// are covered by TestSecretErrorsWithholdValues.
func TestWithholdKeepsClasses(t *testing.T) {
	const value = "s3cr3t-VALUE"
	gr := schema.GroupResource{Resource: "secrets"}
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "db", field.ErrorList{
		field.Invalid(field.NewPath("data").Key("password"), value, "bad"),
	})
	immutable := &ImmutableError{Fields: []string{"data"}, Err: apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "db",
		field.ErrorList{field.Invalid(field.NewPath("data"), value, "field is immutable")})}
	conflict := &ConflictError{Conflicts: []Conflict{{Manager: "kubectl", Field: ".data.password"}},
		Err: apierrors.NewApplyConflict([]metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict,
			Field: ".data.password", Message: `conflict with "kubectl": ` + value}}, "conflict "+value)}
	tests := []struct {
		name string
		err  error
		is   func(error) bool
	}{
		{"invalid", invalid, apierrors.IsInvalid},
		{"bad request", apierrors.NewBadRequest("cannot decode " + value), apierrors.IsBadRequest},
		{"internal", apierrors.NewInternalError(errors.New(value)), apierrors.IsInternalError},
		{"forbidden", apierrors.NewForbidden(gr, "db", errors.New(value)), apierrors.IsForbidden},
		{"immutable", immutable, func(err error) bool { var ie *ImmutableError; return errors.As(err, &ie) && apierrors.IsInvalid(err) }},
		{"conflict", conflict, func(err error) bool { var ce *ConflictError; return errors.As(err, &ce) && apierrors.IsConflict(err) }},
		{"recreate wrapping", fmt.Errorf("recreate after %w: %w", immutable, fmt.Errorf("delete: %w", apierrors.NewForbidden(gr, "db", errors.New(value)))),
			func(err error) bool {
				var ie *ImmutableError
				u, ok := err.(interface{ Unwrap() []error })
				return errors.As(err, &ie) && ok && len(u.Unwrap()) == 2 && apierrors.IsForbidden(u.Unwrap()[1])
			}},
		{"unknown leaf", errors.New("json: " + value), func(err error) bool { return err != nil }},
		{"context", fmt.Errorf("rate limiter: %w", context.DeadlineExceeded), func(err error) bool { return errors.Is(err, context.DeadlineExceeded) && fatal(err) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.is(tt.err) {
				t.Fatal("the original error is not of the class the case expects")
			}
			got := withhold(tt.err, nil)
			if strings.Contains(got.Error(), value) {
				t.Errorf("rebuilt error quotes the value: %s", got)
			}
			if !tt.is(got) {
				t.Errorf("rebuilt error lost its class: %s", got)
			}
			if d := cmp.Diff(apierrors.ReasonForError(tt.err), apierrors.ReasonForError(got)); d != "" {
				t.Errorf("reason (-want +got):\n%s", d)
			}
		})
	}
}
