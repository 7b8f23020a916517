package inventory

import "context"

// Store keeps a sync's inventory between runs. The agent keeps it in the
// GitSync status (in package controller); the CLI in a ConfigMap.
type Store interface {
	// Load returns the stored inventory; an empty one when none was saved.
	Load(ctx context.Context) (*Inventory, error)
	// Save replaces the stored inventory with inv; saving what is stored
	// already writes nothing.
	Save(ctx context.Context, inv *Inventory) error
}
