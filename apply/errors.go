package apply

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Conflict is one field another manager owns with a different value.
type Conflict struct {
	// Manager is the other field manager, e.g. "kubectl-edit" or "hpa-controller".
	Manager string
	// Field is the field path as the apiserver prints it, e.g. ".spec.replicas".
	Field string
}

// ConflictError reports that server-side apply refused to change fields other
// managers own. The fields were left alone; Force (or listing the managers in
// Options.TakeOverManagers) takes them.
type ConflictError struct {
	Conflicts []Conflict
	// Err is the apiserver's 409 error.
	Err error
}

func (e *ConflictError) Error() string {
	byManager := map[string][]string{}
	for _, c := range e.Conflicts {
		byManager[c.Manager] = append(byManager[c.Manager], c.Field)
	}
	var parts []string
	for _, m := range e.Managers() {
		parts = append(parts, fmt.Sprintf("%q owns %s", m, strings.Join(byManager[m], ", ")))
	}
	return "conflict with field manager " + strings.Join(parts, "; ") + " (set force to take ownership)"
}

func (e *ConflictError) Unwrap() error { return e.Err }

// Managers returns the conflicting managers, sorted and without duplicates.
func (e *ConflictError) Managers() []string {
	var out []string
	for _, c := range e.Conflicts {
		out = append(out, c.Manager)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ImmutableError reports a change to a field the apiserver does not allow to
// change. The object is recreated only when it carries RecreateAnnotation:
// "enabled" or Force is set.
type ImmutableError struct {
	// Fields are the immutable field paths, e.g. "spec.selector".
	Fields []string
	// Err is the apiserver's 422 error.
	Err error
}

func (e *ImmutableError) Error() string {
	return fmt.Sprintf("immutable field %s changed (annotate %s: enabled or set force to recreate): %v",
		strings.Join(e.Fields, ", "), RecreateAnnotation, e.Err)
}

func (e *ImmutableError) Unwrap() error { return e.Err }

// asConflict turns an apiserver apply conflict into a *ConflictError; it
// returns nil for any other error.
func asConflict(err error) *ConflictError {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsConflict(err) {
		return nil
	}
	details := status.Status().Details
	if details == nil {
		return nil
	}
	ce := &ConflictError{Err: err}
	for _, c := range details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		ce.Conflicts = append(ce.Conflicts, Conflict{Manager: conflictManager(c.Message), Field: c.Field})
	}
	if len(ce.Conflicts) == 0 {
		return nil
	}
	return ce
}

// conflictManager extracts the manager from a cause message such as
// `conflict with "kubectl-edit" using v1` (the apiserver quotes it with %q).
func conflictManager(msg string) string {
	rest, ok := strings.CutPrefix(msg, "conflict with ")
	if !ok {
		return msg
	}
	quoted, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return rest
	}
	m, err := strconv.Unquote(quoted)
	if err != nil {
		return rest
	}
	return m
}

// asImmutable turns an apiserver "field is immutable" rejection into an
// *ImmutableError; it returns nil for any other error.
func asImmutable(err error) *ImmutableError {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) {
		return nil
	}
	ie := &ImmutableError{Err: err}
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			if strings.Contains(c.Message, "field is immutable") {
				ie.Fields = append(ie.Fields, c.Field)
			}
		}
	}
	if len(ie.Fields) == 0 {
		return nil
	}
	return ie
}
