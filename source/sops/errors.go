package sops

import "fmt"

// Problem classifies a failed decryption.
type Problem string

const (
	// ProblemKey: no identity opens the file's data key.
	ProblemKey Problem = "key"
	// ProblemMAC: a value does not decrypt or the MAC does not match: the
	// file was changed after it was encrypted.
	ProblemMAC Problem = "mac"
	// ProblemFormat: not a SOPS file this package can read.
	ProblemFormat Problem = "format"
	// ProblemKind: the file's values would land in an object that is not
	// a Secret, or in a Secret the file does not hold, or the file's MAC
	// does not cover what kind of object it holds (mac_only_encrypted).
	ProblemKind Problem = "kind"
)

// Error is a file that could not be decrypted. It never holds a value.
type Error struct {
	File    string
	Problem Problem
	Err     error
}

func (e *Error) Error() string {
	return fmt.Sprintf("cannot decrypt %s: %v", e.File, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }
