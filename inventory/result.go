package inventory

import (
	"gitsync.dev/gitsync/object"
)

// Action says what pruning or orphaning did with one object.
type Action string

const (
	// ActionPruned means the object was deleted and is gone (or, in a dry
	// run, would be deleted).
	ActionPruned Action = "pruned"
	// ActionKept means the object was left alone on purpose; Reason says why.
	ActionKept Action = "kept"
	// ActionAbsent means the object was already gone: nothing to do.
	ActionAbsent Action = "absent"
	// ActionOrphaned means the object keeps running without our owner labels.
	ActionOrphaned Action = "orphaned"
	// ActionFailed means the object could not be deleted or orphaned; it stays
	// in the inventory and is retried.
	ActionFailed Action = "failed"
	// ActionUnknown means the object's kind is not served (a CRD with no
	// served version, an aggregated API down), so whether it exists cannot
	// be known: unknown is not absent. It stays in the inventory, is
	// reported like a failure, and is pruned once its kind is served again.
	ActionUnknown Action = "unknown"
)

// PruneEntry is the outcome for one object.
type PruneEntry struct {
	ID     object.ID
	Action Action
	// Reason explains the action in words for status, events and the CLI.
	Reason string
	// Err is the cause of ActionFailed.
	Err error
}

// PruneResult is the outcome of Execute or Orphan.
type PruneResult struct {
	// Entries has one entry per object considered, in the order handled.
	Entries []PruneEntry
	// Remaining is the inventory to store afterwards: the desired objects
	// plus every object that failed (so it is retried, never forgotten).
	// Objects kept on purpose and objects gone are dropped.
	Remaining *Inventory
}

// Count returns how many entries have action a.
func (r *PruneResult) Count(a Action) int {
	n := 0
	for _, e := range r.Entries {
		if e.Action == a {
			n++
		}
	}
	return n
}
