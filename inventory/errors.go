package inventory

import (
	"errors"
	"fmt"

	"gitsync.dev/gitsync/object"
)

// Sentinels for the reasons Plan refuses to prune; test with errors.Is and
// read the counts with errors.As(err, *RefusedError).
var (
	// ErrSyncIncomplete: fetch, render or apply of the new revision did not
	// all succeed, so the desired inventory cannot be trusted.
	ErrSyncIncomplete = errors.New("sync did not succeed")
	// ErrEmptyDesired: the new revision renders zero objects and empty
	// renders are not allowed.
	ErrEmptyDesired = errors.New("desired inventory is empty")
	// ErrPruneLimit: more than the allowed share of the inventory would be
	// pruned at once.
	ErrPruneLimit = errors.New("prune limit exceeded")
)

// RefusedError reports that Plan refused to prune anything. It is terminal
// for this revision: retrying the same inputs refuses again.
type RefusedError struct {
	// Cause is one of ErrSyncIncomplete, ErrEmptyDesired, ErrPruneLimit.
	Cause error
	// Stale is how many inventory objects are absent from the desired set.
	Stale int
	// Total is how many objects the previous inventory holds.
	Total int
	// MaxShare is the limit that applied (for ErrPruneLimit).
	MaxShare float64
	// Keep is the inventory to store instead: previous ∪ desired, so no
	// stale object is forgotten and it can be pruned once allowed.
	Keep *Inventory
}

func (e *RefusedError) Error() string {
	if errors.Is(e.Cause, ErrPruneLimit) {
		return fmt.Sprintf("prune refused: %v: %d of %d objects are stale, more than the allowed share %.0f%%",
			e.Cause, e.Stale, e.Total, e.MaxShare*100)
	}
	return fmt.Sprintf("prune refused: %v (%d of %d objects stale)", e.Cause, e.Stale, e.Total)
}

func (e *RefusedError) Unwrap() error { return e.Cause }

// ErrKindNotServed: an inventory object's kind is not served, so it can be
// neither read nor deleted; it is kept in the inventory until it is.
var ErrKindNotServed = errors.New("kind not served; kept until it is served again")

// ErrNotGone: an object was deleted but is still present when the wait
// timed out, typically held by a finalizer.
var ErrNotGone = errors.New("still present when the wait timed out")

// ObjectError is the failure of one object: "Kind/ns/name prune failed: cause".
type ObjectError struct {
	ID object.ID
	// Verb is what failed: "prune" or "orphan".
	Verb string
	Err  error
}

func (e *ObjectError) Error() string { return fmt.Sprintf("%s %s failed: %v", e.ID, e.Verb, e.Err) }

func (e *ObjectError) Unwrap() error { return e.Err }

func objectError(id object.ID, verb string, err error) error {
	return &ObjectError{ID: id, Verb: verb, Err: err}
}
