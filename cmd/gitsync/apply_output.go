package main

import (
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/inventory"
)

// applyItem is one object of `gitsync apply -o json|yaml`.
type applyItem struct {
	Subject string `json:"subject"`
	// Action is created, configured, unchanged, pruned, skipped or failed
	// (apply's), or kept or unknown (a prune held back).
	Action string `json:"action"`
	// TookOver names the kubectl managers whose fields were taken back.
	TookOver  []string `json:"tookOver,omitempty"`
	Recreated bool     `json:"recreated,omitempty"`
	// Reason says why an object failed, was skipped or was not pruned.
	Reason string `json:"reason,omitempty"`
}

// applyItems lists the change set (pruned objects included, see
// printPruned) and the prunes held back.
func applyItems(cs *apply.ChangeSet, pruned *inventory.PruneResult) []applyItem {
	items := make([]applyItem, 0, len(cs.Entries))
	for _, e := range cs.Entries {
		it := applyItem{Subject: e.Subject, Action: string(e.Action), TookOver: e.TookOver, Recreated: e.Recreated}
		if e.Subject == "" {
			it.Subject = e.ID.String()
		}
		if e.Err != nil {
			it.Reason = e.Err.Error()
		}
		items = append(items, it)
	}
	if pruned == nil {
		return items
	}
	for _, e := range pruned.Entries {
		switch e.Action {
		case inventory.ActionKept, inventory.ActionUnknown:
			items = append(items, applyItem{Subject: e.ID.String(), Action: string(e.Action), Reason: e.Reason})
		}
	}
	return items
}
