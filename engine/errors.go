package engine

import (
	"errors"
	"fmt"

	"gitsync.dev/gitsync/apply"
)

// ApplyError reports that not every desired object was applied, so nothing
// was pruned. Callers tell a failure of the whole run (Run: apiserver
// unreachable, context cancelled) from failures of single objects (in
// Changes) to decide whether retrying can help.
type ApplyError struct {
	// Run is the failure of the whole apply; nil when only objects failed.
	Run error
	// Changes has the failed and skipped entries.
	Changes *apply.ChangeSet
}

func (e *ApplyError) Error() string {
	if e.Run != nil {
		return e.Run.Error()
	}
	return e.Changes.Err().Error()
}

func (e *ApplyError) Unwrap() error { return e.Run }

// PruneError reports that the prune was refused by a rail
// (*inventory.RefusedError) or that some deletions failed; Err says which.
type PruneError struct {
	Err error
}

func (e *PruneError) Error() string { return e.Err.Error() }

func (e *PruneError) Unwrap() error { return e.Err }

// StoreError reports that the inventory could not be loaded or saved. A
// failed save of pending entries means nothing was applied.
type StoreError struct {
	// Op is "load", "record pending" or "save".
	Op  string
	Err error
}

func (e *StoreError) Error() string { return fmt.Sprintf("inventory %s failed: %v", e.Op, e.Err) }

func (e *StoreError) Unwrap() error { return e.Err }

// applyError returns the *ApplyError of an apply, nil when every object applied.
func applyError(cs *apply.ChangeSet, runErr error) error {
	if runErr == nil && cs.Err() == nil {
		return nil
	}
	return &ApplyError{Run: runErr, Changes: cs}
}

// joinSave adds a failed save to the run's error.
func joinSave(err, saveErr error) error {
	if saveErr == nil {
		return err
	}
	return errors.Join(err, &StoreError{Op: "save", Err: saveErr})
}
