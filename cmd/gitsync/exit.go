package main

import (
	"errors"
	"fmt"
	"io"
)

// Exit codes shared by every command. diff follows diff(1) and kubectl diff:
// 0 in sync, 1 differences, 2 trouble.
const (
	exitOK          = 0
	exitFailure     = 1 // a command failed (apply, status), or diff found differences
	exitDifferences = 1
	exitError       = 2 // diff could not decide: bad input, unreachable cluster
)

// ExitError carries a command's exit status to main. A command returns it
// instead of calling os.Exit, so its deferred cleanups run and tests can
// read the code.
type ExitError struct {
	// Code is the process exit status.
	Code int
	// Err is what went wrong; nil when the status alone is the message (diff
	// exiting 1 because it found differences, after printing them).
	Err error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// withExitCode wraps err so it exits with code; nil stays nil and an error
// that already carries a code keeps it.
func withExitCode(code int, err error) error {
	if err == nil {
		return nil
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return err
	}
	return &ExitError{Code: code, Err: err}
}

// reportError prints err (unless it is a bare exit status) and returns the
// exit code for it: the ExitError's code, or 1 for any other error.
func reportError(w io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	code := exitFailure
	var ee *ExitError
	if errors.As(err, &ee) {
		code = ee.Code
		if ee.Err == nil {
			return code
		}
	}
	fmt.Fprintln(w, "error:", err)
	return code
}
