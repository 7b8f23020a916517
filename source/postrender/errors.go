package postrender

import (
	"errors"
	"fmt"
)

// Error is a change that could not be made. Field is the spec field it
// came from (spec.patches[1], spec.images[0], spec.commonMetadata); the
// message never quotes an object's content when the change touched a
// Secret.
type Error struct {
	// Field names the change, e.g. "spec.patches[1]".
	Field string
	// Detail says what went wrong, e.g. "target kind=Deployment matches no object".
	Detail string
	// Err is kustomize's cause, or nil (withheld, or none).
	Err error
}

func (e *Error) Error() string {
	s := e.Field + ": " + e.Detail
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// withheld is kustomize's message kept back because the objects it was
// about include a Secret.
type withheld struct{}

func (withheld) Error() string {
	return "kustomize's message is withheld: the change touches a Secret, whose data it may quote"
}

func patchField(i int) string { return fmt.Sprintf("spec.patches[%d]", i) }
func imageField(i int) string { return fmt.Sprintf("spec.images[%d]", i) }

func asError(err error, target **Error) bool { return errors.As(err, target) }
