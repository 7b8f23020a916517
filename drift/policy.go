package drift

import (
	"fmt"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// Policy is how one object is applied, from its gitsync.dev/apply
// annotation in Git.
type Policy string

const (
	// Apply is the default: created, updated and kept in sync.
	Apply Policy = ""
	// CreateOnly creates the object when it is absent and never updates it.
	CreateOnly Policy = v1.ApplyCreateOnly
	// Disabled leaves the object alone: never created, updated or (unless
	// it carries the sync's owner labels) pruned.
	Disabled Policy = v1.ApplyDisabled
)

// PolicyOf returns the policy the annotations ask for; an unknown value is
// an error naming the values there are.
func PolicyOf(annotations map[string]string) (Policy, error) {
	v, ok := annotations[v1.AnnotationApply]
	if !ok {
		return Apply, nil
	}
	switch Policy(v) {
	case CreateOnly, Disabled:
		return Policy(v), nil
	}
	return Apply, fmt.Errorf("annotation %s: %q is not %q or %q", v1.AnnotationApply, v, v1.ApplyCreateOnly, v1.ApplyDisabled)
}

// Reason says, for a diff or a change set, why an object with this policy
// was not written.
func (p Policy) Reason() string {
	switch p {
	case CreateOnly:
		return v1.AnnotationApply + ": " + v1.ApplyCreateOnly + " (exists; never updated)"
	case Disabled:
		return v1.AnnotationApply + ": " + v1.ApplyDisabled + " (left alone)"
	}
	return ""
}
