package inventory

import (
	"fmt"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/object"
)

// FromGitSyncStatus reads the inventory recorded in a GitSync's status (the
// agent's store, and what `gitsync diff --gitsync` previews prunes against). An
// entry whose ID does not parse is an error: forgetting it could leave an
// object behind that should have been pruned.
func FromGitSyncStatus(gs *v1.GitSync) (*Inventory, error) {
	if gs.Status.Inventory == nil {
		return New(), nil
	}
	entries := make([]Entry, 0, len(gs.Status.Inventory.Entries))
	for _, e := range gs.Status.Inventory.Entries {
		id, err := object.ParseKey(e.ID)
		if err != nil {
			return nil, fmt.Errorf("GitSync/%s/%s status inventory invalid: %w", gs.Namespace, gs.Name, err)
		}
		entries = append(entries, Entry{ID: id, UID: e.UID, Version: e.Version, Pending: e.Pending})
	}
	return New(entries...), nil
}

// ToGitSyncStatus is the status form of inv; nil for an empty inventory, so
// an unsynced GitSync has no inventory field at all.
func ToGitSyncStatus(inv *Inventory) *v1.Inventory {
	if inv.Len() == 0 {
		return nil
	}
	out := &v1.Inventory{Entries: make([]v1.InventoryEntry, 0, inv.Len())}
	for _, e := range inv.Entries {
		out.Entries = append(out.Entries, v1.InventoryEntry{ID: e.ID.Key(), Version: e.Version, UID: e.UID, Pending: e.Pending})
	}
	return out
}
