package controller

import (
	"context"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/inventory"
)

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
	inv, err := inventory.FromGitSyncStatus(s.gs)
	if err != nil {
		return nil, stalled(v1.ReasonInvalidSpec, err)
	}
	return inv, nil
}

func (s *statusStore) Save(ctx context.Context, inv *inventory.Inventory) error {
	return s.r.writeStatus(ctx, s.gs, s.st, func(st *v1.GitSyncStatus) { st.Inventory = inventory.ToGitSyncStatus(inv) })
}
