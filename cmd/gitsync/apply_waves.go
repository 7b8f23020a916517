package main

import (
	"context"
	"fmt"

	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/health"
	"gitsync.dev/gitsync/object"
)

// waitBetweenWaves is the wave gate of `gitsync apply --wait`: after each
// gitsync.dev/wave but the last, it waits (by watch, up to --timeout) until
// every object applied so far is ready before the next wave is applied. A
// failed wait holds the later waves (nothing is pruned) and is left in
// *failed. The apply's progress line stays up meanwhile: a second one
// would draw over it.
func (o *applyOptions) waitBetweenWaves(tgt *connectedCluster, failed *error) apply.WaveGate {
	return func(ctx context.Context, done, next int, cs *apply.ChangeSet) bool {
		var ids []object.ID
		for _, e := range cs.Entries {
			switch e.Action {
			case apply.Created, apply.Configured, apply.Unchanged:
				ids = append(ids, e.ID)
			}
		}
		if _, err := health.Wait(ctx, tgt.Config, ids, o.waitOptions()); err != nil {
			*failed = fmt.Errorf("wave %d not ready, so wave %d and later were not applied: wait: %w", done, next, err)
			return false
		}
		return true
	}
}
