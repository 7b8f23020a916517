package prepare

import "fmt"

// SpecError is a spec that cannot work as written (InvalidSpec): fixing
// the GitSync is the only way on.
type SpecError struct {
	// Field is the spec field or annotation at fault.
	Field string
	Err   error
}

func (e *SpecError) Error() string { return fmt.Sprintf("%s: %v", e.Field, e.Err) }
func (e *SpecError) Unwrap() error { return e.Err }

// MissingError is an object the spec names that does not exist and is not
// optional.
type MissingError struct {
	// Subject is "Kind/namespace/name"; Field the spec field naming it.
	Subject, Field string
	// Hint says how to sync without it, if there is a way.
	Hint string
}

func (e *MissingError) Error() string {
	msg := fmt.Sprintf("%s named in %s not found", e.Subject, e.Field)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// ReadError is a named object that could not be read; Err says why (a
// refusal of the account, a watch not ready, the apiserver).
type ReadError struct {
	Subject, Field string
	Err            error
}

func (e *ReadError) Error() string { return fmt.Sprintf("%s read failed: %v", e.Subject, e.Err) }
func (e *ReadError) Unwrap() error { return e.Err }
