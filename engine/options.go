package engine

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/object"
)

// Applier writes desired objects; *apply.Applier is the one gitsync uses.
type Applier interface {
	// IDs returns the ID each object would be applied under, zero when its
	// kind is unknown (Apply skips it): the pending entries are recorded
	// under these IDs before Apply runs.
	IDs(objs []*unstructured.Unstructured) []object.ID
	// ApplyWaves applies objs stage by stage and wave by wave, asking gate
	// (when not nil) between two waves whether to go on.
	ApplyWaves(ctx context.Context, objs []*unstructured.Unstructured, gate apply.WaveGate) (*apply.ChangeSet, error)
}

var _ Applier = (*apply.Applier)(nil)

// Options configure one Run.
type Options struct {
	// Applier writes the desired objects. It carries what differs per sync
	// (owner labels, default namespace, force, identity). Required.
	Applier Applier
	// Client reads live objects for prune decisions and deletes them. It
	// must read from the apiserver directly (a cache would start an informer
	// for every stale kind) and be able to watch (deletions are awaited by
	// watch). Required with a Store.
	Client client.WithWatch
	// Prune deletes inventory objects that left the desired set. Without it
	// they stay in the inventory, so turning pruning on later still knows
	// them, and nothing carrying the owner labels is ever forgotten.
	Prune bool
	// PruneOptions are the prune rails: the owner (Name, Namespace), the
	// share limit, empty renders, Namespaces and CRDs. SyncSucceeded is set
	// by Run, which alone knows whether every object applied.
	PruneOptions inventory.PruneOptions
	// OnPrune, when set, is told how many deletions are about to run and
	// returns what to call when they are done: a CLI draws a progress bar.
	OnPrune func(deletions int) (done func())
	// BetweenWaves, when set, is asked after each gitsync.dev/wave of the
	// desired objects applied whether to apply the next one now. The agent
	// holds later waves while an earlier one is not healthy (spec.wait) and
	// applies them in a later run; the CLI waits in it. A held run records
	// what it applied and prunes nothing (Result.Held).
	BetweenWaves apply.WaveGate
	// FinalSaveByCaller leaves the inventory recorded after the apply (and
	// prune) to the caller: Run still saves the pending entries before it
	// applies, and returns the final inventory in Result.Inventory without
	// saving it. The agent writes it with the status that reports the sync,
	// one write instead of two. A caller that dies before that write leaves
	// the pending record, which lists every object this Run created, so
	// nothing it applied is forgotten; objects it pruned are still listed
	// and pruned again (found gone) by the next Run.
	FinalSaveByCaller bool
}

// DefaultOptions returns options with pruning on and inventory's default
// rails; the caller sets Applier, Client and the owner.
func DefaultOptions() Options {
	return Options{Prune: true, PruneOptions: inventory.DefaultPruneOptions()}
}
