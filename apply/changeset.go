package apply

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"gitsync.dev/gitsync/drift"
	"gitsync.dev/gitsync/object"
)

// Action is what happened (or, in a dry run, would happen) to one object.
type Action string

// The actions an entry can report. The Applier never prunes and never sets
// Pruned: package inventory reports deletions in its own PruneResult, and
// the CLI adds them to the ChangeSet it prints (as Pruned) so its summary
// counts them.
const (
	Created    Action = "created"
	Configured Action = "configured"
	Unchanged  Action = "unchanged"
	Pruned     Action = "pruned"
	Skipped    Action = "skipped"
	Failed     Action = "failed"
	// Ignored: the object is annotated gitsync.dev/apply: disabled, and
	// was neither created nor updated (Entry.Reason says so).
	Ignored Action = "ignored"
	// Drifted: the object differs from Git (Entry.Fields names where) and
	// was left as it is (Options.DetectOnly).
	Drifted Action = "drifted"
)

// actionOrder fixes the order of actions in Summary.
var actionOrder = []Action{Created, Configured, Unchanged, Drifted, Ignored, Pruned, Skipped, Failed}

// Entry is the outcome for one object.
type Entry struct {
	// ID names the object independent of its API version.
	ID object.ID
	// Subject is ID.String(): "Kind/namespace/name", the form used in every message.
	Subject string
	// Action is what happened.
	Action Action
	// UID is the live object's UID after the action (empty when it does not exist).
	UID types.UID
	// Diff is the masked unified diff of the change, filled only with Options.Diff.
	Diff string
	// Err says why the entry failed or was skipped; nil otherwise.
	Err error
	// TookOver lists the field managers (from Options.TakeOverManagers) whose
	// fields were taken back to make the object match Git.
	TookOver []string
	// Recreated is true when an immutable-field change was applied by deleting
	// and creating the object (a new UID).
	Recreated bool
	// Reason says why an object was not written although it is not in
	// sync: its gitsync.dev/apply policy, or that it is missing (Drifted).
	Reason string
	// Fields names what differs from Git in a Drifted entry: JSON
	// pointers, never values.
	Fields []string
	// Skips are the fields of Git that ignore rules left alone
	// (Options.Ignore), so a diff can say why they are not shown.
	Skips []drift.Skip
}

// Drifted returns the entries whose action is Drifted.
func (cs *ChangeSet) Drifted() []Entry { return cs.withAction(Drifted) }

// ChangeSet is the outcome of one Apply: one entry per object, in the order
// the objects were given. An entry whose Action is empty was not reached:
// its wave was held by the WaveGate, or the run stopped before it (a failed
// earlier stage, an invalid wave annotation).
type ChangeSet struct {
	Entries []Entry
}

// Add appends an entry, filling Subject from ID when empty.
func (cs *ChangeSet) Add(e Entry) {
	if e.Subject == "" {
		e.Subject = e.ID.String()
	}
	cs.Entries = append(cs.Entries, e)
}

// Failed returns the entries whose action is Failed.
func (cs *ChangeSet) Failed() []Entry { return cs.withAction(Failed) }

// Skipped returns the entries whose action is Skipped.
func (cs *ChangeSet) Skipped() []Entry { return cs.withAction(Skipped) }

func (cs *ChangeSet) withAction(a Action) []Entry {
	var out []Entry
	for _, e := range cs.Entries {
		if e.Action == a {
			out = append(out, e)
		}
	}
	return out
}

// Err joins the errors of the failed and skipped entries; nil when every
// object was applied. A skipped object was not applied (its kind is not
// served, or its CRD failed), so the set is not in the cluster either way.
func (cs *ChangeSet) Err() error {
	var errs []error
	for _, e := range cs.Entries {
		if e.Action != Failed && e.Action != Skipped {
			continue
		}
		err := e.Err
		if err == nil {
			err = fmt.Errorf("%s %s", e.Subject, e.Action)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Changed reports whether any object was created, configured or pruned.
func (cs *ChangeSet) Changed() bool {
	for _, e := range cs.Entries {
		if e.Action == Created || e.Action == Configured || e.Action == Pruned {
			return true
		}
	}
	return false
}

// Summary counts entries per action, e.g. "3 created, 1 configured, 10
// unchanged, 1 failed"; actions with no entries are left out.
func (cs *ChangeSet) Summary() string {
	counts := map[Action]int{}
	for _, e := range cs.Entries {
		counts[e.Action]++
	}
	var parts []string
	for _, a := range actionOrder {
		if counts[a] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[a], a))
		}
	}
	if len(parts) == 0 {
		return "no objects"
	}
	return strings.Join(parts, ", ")
}
