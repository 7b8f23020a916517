package controller

import (
	"context"
	"fmt"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/inventory"
)

// inventoryOf reads the inventory recorded in a GitSync's status. An entry
// whose ID does not parse is an error: forgetting it could leave an object
// behind that should have been pruned.
func inventoryOf(gs *v1.GitSync) (*inventory.Inventory, error) {
	if gs.Status.Inventory == nil {
		return inventory.New(), nil
	}
	entries := make([]inventory.Entry, 0, len(gs.Status.Inventory.Entries))
	for _, e := range gs.Status.Inventory.Entries {
		id, err := inventory.ParseKey(e.ID)
		if err != nil {
			return nil, fmt.Errorf("GitSync/%s/%s status inventory invalid: %w", gs.Namespace, gs.Name, err)
		}
		entries = append(entries, inventory.Entry{ID: id, UID: e.UID, Version: e.Version, Pending: e.Pending})
	}
	return inventory.New(entries...), nil
}

// statusInventory is the status form of inv; nil for an empty inventory so
// an unsynced GitSync has no inventory field at all.
func statusInventory(inv *inventory.Inventory) *v1.Inventory {
	if inv.Len() == 0 {
		return nil
	}
	out := &v1.Inventory{Entries: make([]v1.InventoryEntry, 0, inv.Len())}
	for _, e := range inv.Entries {
		out.Entries = append(out.Entries, v1.InventoryEntry{ID: e.ID.Key(), Version: e.Version, UID: e.UID, Pending: e.Pending})
	}
	return out
}

// statusStore keeps one GitSync's inventory in its status: the agent's
// inventory.Store. Save writes status.inventory alone, with the same
// stale-resourceVersion guard as every status write, and nothing when the
// inventory is unchanged.
type statusStore struct {
	r  *GitSyncReconciler
	gs *v1.GitSync
	st *syncState
}

var _ inventory.Store = (*statusStore)(nil)

func (s *statusStore) Load(context.Context) (*inventory.Inventory, error) {
	inv, err := inventoryOf(s.gs)
	if err != nil {
		return nil, stalled(v1.ReasonInvalidSpec, err)
	}
	return inv, nil
}

func (s *statusStore) Save(ctx context.Context, inv *inventory.Inventory) error {
	return s.r.writeStatus(ctx, s.gs, s.st, func(st *v1.GitSyncStatus) { st.Inventory = statusInventory(inv) })
}
