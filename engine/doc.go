// Package engine is the one sync pipeline the agent and the CLI both run:
// record pending → apply → record → plan prune → execute → record. A safety
// rule of that composition lives here and nowhere else.
//
// Contract: Run is level-based and idempotent; a run on a converged cluster
// writes nothing (the applier decides unchanged objects from live state, and
// saving an unchanged inventory writes nothing). Nothing is pruned unless
// every desired object applied; what could not be pruned stays in the
// inventory and is retried. Objects are recorded in the inventory before
// they are applied (as pending entries, see package inventory), so a crash
// or a failed save between apply and record leaves no object carrying the
// owner labels outside the inventory. Run never waits for health: the caller
// does, after a successful run.
//
// The inventory lives behind inventory.Store: the agent's GitSync status
// (package controller) or the CLI's ConfigMap (inventory.NewConfigMapStore).
package engine
