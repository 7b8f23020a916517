package main

import (
	"errors"
	"fmt"
	"io"

	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/engine"
)

// Exit codes shared by every command. diff follows diff(1) and kubectl diff:
// 0 in sync, 1 differences, 2 trouble.
const (
	exitOK          = 0
	exitFailure     = 1 // a command failed (apply, status), or diff found differences
	exitDifferences = 1
	exitError       = 2 // diff could not decide: bad input, unreachable cluster
)

// exitErr carries a command's exit status to main. A command returns it
// instead of calling os.Exit, so its deferred cleanups run and tests can
// read the code.
type exitErr struct {
	// Code is the process exit status.
	Code int
	// Err is what went wrong; nil when the status alone is the message (diff
	// exiting 1 because it found differences, after printing them).
	Err error
}

func (e *exitErr) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *exitErr) Unwrap() error { return e.Err }

// withExitCode wraps err so it exits with code; nil stays nil and an error
// that already carries a code keeps it.
func withExitCode(code int, err error) error {
	if err == nil {
		return nil
	}
	var ee *exitErr
	if errors.As(err, &ee) {
		return err
	}
	return &exitErr{Code: code, Err: err}
}

// listedError is a failure whose parts the command has already printed, one
// line per object. reportError then prints only what the lines do not say:
// the fix for a namespace that does not exist (once, however many objects it
// failed) and how many objects failed.
type listedError struct {
	// Err joins the failures, one per object.
	Err error
	// Verb is how the lines said it: "failed" or "would fail".
	Verb string
}

func (e *listedError) Error() string { return e.Err.Error() }

func (e *listedError) Unwrap() error { return e.Err }

// listed marks err, joined failures of objects a command has printed, as
// listed; nil stays nil.
func listed(err error, verb string) error {
	if err == nil {
		return nil
	}
	return &listedError{Err: err, Verb: verb}
}

// reportError prints err (unless it is a bare exit status) and returns the
// exit code for it: the exitErr's code, or 1 for any other error.
func reportError(w io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	code := exitFailure
	var ee *exitErr
	if errors.As(err, &ee) {
		code = ee.Code
		if ee.Err == nil {
			return code
		}
		// Unwrapped only when it is the whole error: a wrapper's context
		// ("diff: …") stays in the message.
		if err == error(ee) {
			err = ee.Err
		}
	}
	for _, line := range errorLines(err) {
		fmt.Fprintln(w, "error:", line)
	}
	return code
}

// errorLines is err as lines for stderr: the failures of objects the command
// has listed become a summary, anything else is said as it is.
func errorLines(err error) []string {
	var le *listedError
	var ae *engine.ApplyError
	switch {
	case errors.As(err, &le) && err == error(le):
		return summarize(leaves(le.Err), le.Verb)
	case errors.As(err, &ae) && err == error(ae) && ae.Run == nil:
		// apply printed one line per entry of the change set
		return summarize(leaves(ae.Changes.Err()), "failed")
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, errorLines(e)...)
		}
		return out
	}
	return []string{err.Error()}
}

// leaves returns the errors errors.Join put together in err.
func leaves(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// summarize says once per missing namespace what to do, and counts the other
// failures: their lines are already printed.
func summarize(errs []error, verb string) []string {
	var out []string
	seen := map[string]bool{}
	others := 0
	for _, err := range errs {
		var nm *apply.NamespaceMissingError
		if !errors.As(err, &nm) {
			others++
			continue
		}
		if !seen[nm.Namespace] {
			seen[nm.Namespace] = true
			out = append(out, nm.Error()+": "+nm.Hint())
		}
	}
	if others > 0 {
		out = append(out, fmt.Sprintf("%s %s", plural(others, "object"), verb))
	}
	return out
}

// plural is "1 object", "2 objects".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
