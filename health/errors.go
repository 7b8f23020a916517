package health

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// FailedError reports that Wait stopped because an object Failed.
type FailedError struct {
	// Failed are the results with status Failed.
	Failed []Result
}

func (e *FailedError) Error() string {
	parts := make([]string, len(e.Failed))
	for i, r := range e.Failed {
		parts[i] = fmt.Sprintf("%s failed: %s", r.ID, r.Message)
	}
	return strings.Join(parts, "; ")
}

// TimeoutError reports that the objects in Pending were not Current when the
// wait's timeout expired. It unwraps to context.DeadlineExceeded.
type TimeoutError struct {
	Timeout time.Duration
	Pending []Result
}

func (e *TimeoutError) Error() string {
	parts := make([]string, len(e.Pending))
	for i, r := range e.Pending {
		parts[i] = fmt.Sprintf("%s is %s", r.ID, r.Status)
		if r.Message != "" {
			parts[i] += " (" + r.Message + ")"
		}
	}
	return fmt.Sprintf("not ready after %s: %s", e.Timeout, strings.Join(parts, "; "))
}

func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// RuleError reports a health rule (package health/rules) that does not
// compile, or failed to evaluate on an object: the object's health is not
// known, and no wait treats it as ready.
type RuleError struct {
	// Rule names the rule by group and kind ("cert-manager.io/Certificate").
	Rule string
	// Field is the expression: current, inProgress or failed; empty for
	// the rule as a whole.
	Field string
	// Object is the object it failed on; empty for a compile error.
	Object string
	Err    error
}

func (e *RuleError) Error() string {
	where := "health rule " + e.Rule
	if e.Field != "" {
		where += " " + e.Field
	}
	if e.Object != "" {
		where += " on " + e.Object
	}
	return where + ": " + e.Err.Error()
}

func (e *RuleError) Unwrap() error { return e.Err }
