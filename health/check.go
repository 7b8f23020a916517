package health

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"gitsync.dev/gitsync/object"
)

// Status is the kstatus readiness of an object.
type Status = status.Status

// The statuses an object can have (kstatus conventions).
const (
	// Current: the object is fully reconciled and ready (a Deployment is Available
	// with all replicas updated, a Job completed, a ConfigMap exists).
	Current = status.CurrentStatus
	// InProgress: the object is being reconciled and may still become Current.
	InProgress = status.InProgressStatus
	// Failed: the object will not become Current without a change
	// (ProgressDeadlineExceeded, a failed Job, a Stalled condition).
	Failed = status.FailedStatus
	// Terminating: the object is being deleted.
	Terminating = status.TerminatingStatus
	// NotFound: the object does not exist.
	NotFound = status.NotFoundStatus
	// Unknown: the status could not be determined (yet).
	Unknown = status.UnknownStatus
)

// Result is the readiness of one object.
type Result struct {
	// ID names the object.
	ID object.ID
	// Status is its kstatus status.
	Status Status
	// Message says why, in kstatus' words ("Deployment is available. Replicas: 2").
	Message string
}

// Check computes the readiness of one object with kstatus. It is pure: it
// looks only at obj.
func Check(obj *unstructured.Unstructured) (Result, error) {
	id := object.IDOf(obj)
	res, err := status.Compute(obj)
	if err != nil {
		return Result{ID: id, Status: Unknown}, fmt.Errorf("%s health check failed: %w", id, err)
	}
	return Result{ID: id, Status: res.Status, Message: res.Message}, nil
}

// Rules judge the kinds they cover in place of kstatus (CEL health rules,
// compiled by package health/rules).
type Rules interface {
	// Check returns the health of obj and true when a rule covers its
	// kind; an error (a *RuleError) when the rule failed to evaluate.
	Check(ctx context.Context, obj *unstructured.Unstructured) (Result, bool, error)
}

// CheckWith is Check, except that a kind rules cover is judged by its rule.
// rules may be nil.
func CheckWith(ctx context.Context, obj *unstructured.Unstructured, rules Rules) (Result, error) {
	if rules != nil {
		if res, ok, err := rules.Check(ctx, obj); ok {
			return res, err
		}
	}
	return Check(obj)
}

// Aggregate is the status of a set of objects: Failed if any failed, Current
// if all are Current (or the set is empty), InProgress otherwise.
func Aggregate(results []Result) Status {
	all := Current
	for _, r := range results {
		switch r.Status {
		case Failed:
			return Failed
		case Current:
		default:
			all = InProgress
		}
	}
	return all
}
