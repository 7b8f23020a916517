package engine

import (
	"context"
	"errors"

	"gitsync.dev/gitsync/tracing"
	"go.opentelemetry.io/otel/attribute"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/drift"
	"gitsync.dev/gitsync/internal/crashpoint"
	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/object"
)

// Result is what one Run did.
type Result struct {
	// Changes has one entry per desired object, in the order given; nil
	// when nothing was applied.
	Changes *apply.ChangeSet
	// Pruned is the outcome of the prune; nil when none ran.
	Pruned *inventory.PruneResult
	// Inventory is what Run recorded last (or tried to, when the save
	// failed); nil when it recorded nothing.
	Inventory *inventory.Inventory
	// Held is set when Options.BetweenWaves held the later waves back: the
	// objects applied so far are recorded, nothing was pruned, and the
	// entries of the held objects have no Action.
	Held bool
}

// Run makes the cluster match desired and records it in store: the objects
// applied, and those that could not be pruned yet (with
// Options.FinalSaveByCaller, only the pending record; the rest is the
// caller's to write). With a nil store nothing
// is recorded and nothing is pruned (an apply that claims no ownership).
//
// The error is an *ApplyError, *PruneError or *StoreError (possibly joined
// with a *StoreError of the final save); Result is never nil.
func Run(ctx context.Context, desired []*unstructured.Unstructured, store inventory.Store, opts Options) (*Result, error) {
	res := &Result{}
	if opts.Applier == nil {
		return res, errors.New("engine: an Applier is required")
	}
	gate := holdGate(opts.BetweenWaves, res)
	if store == nil {
		cs, err := opts.Applier.ApplyWaves(ctx, desired, gate)
		res.Changes = cs
		return res, applyError(cs, err)
	}
	if opts.Client == nil {
		return res, errors.New("engine: a Client is required to prune")
	}
	stored, err := store.Load(ctx)
	if err != nil {
		return res, &StoreError{Op: "load", Err: err}
	}
	ids := opts.Applier.IDs(desired)
	old := stored
	if pending := pendingEntries(desired, ids, stored); len(pending) > 0 {
		old = stored.Union(inventory.New(pending...))
		if err := store.Save(ctx, old); err != nil {
			return res, &StoreError{Op: "record pending", Err: err}
		}
		res.Inventory = old
	}
	crashpoint.Hit(crashpoint.BeforeApply)
	actx, aspan := tracing.Start(ctx, "apply", attribute.Int("gitsync.objects", len(desired)))
	cs, runErr := opts.Applier.ApplyWaves(actx, desired, gate)
	if cs != nil {
		aspan.SetAttributes(attribute.String("gitsync.changes", cs.Summary()))
	}
	tracing.End(aspan, applyError(cs, runErr))
	res.Changes = cs
	applied := appliedInventory(desired, cs)
	old = withoutUnapplied(old, stored, ids, cs)
	crashpoint.Hit(crashpoint.AfterApply)
	save := func(inv *inventory.Inventory, err error) (*Result, error) {
		res.Inventory = inv
		if opts.FinalSaveByCaller {
			return res, err
		}
		return res, joinSave(err, store.Save(ctx, inv))
	}
	if err := applyError(cs, runErr); err != nil {
		return save(old.Union(applied), err)
	}
	if res.Held {
		// Later waves are still to come: what left Git is pruned only
		// once every wave applied.
		return save(old.Union(applied), nil)
	}
	if len(old.Diff(applied)) == 0 {
		return save(applied, nil)
	}
	if !opts.Prune {
		return save(old.Union(applied), nil)
	}
	return prune(ctx, old, applied, opts, res, save)
}

// prune deletes what old has and applied does not and records what remains.
func prune(ctx context.Context, old, applied *inventory.Inventory, opts Options, res *Result, save func(*inventory.Inventory, error) (*Result, error)) (_ *Result, err error) {
	ctx, span := tracing.Start(ctx, "prune")
	defer func() { tracing.End(span, err) }()
	popts := opts.PruneOptions
	popts.SyncSucceeded = true
	plan, err := inventory.Plan(ctx, opts.Client, old, applied, popts)
	if err != nil {
		keep := old.Union(applied)
		var re *inventory.RefusedError
		if errors.As(err, &re) && re.Keep != nil {
			keep = re.Keep
		}
		return save(keep, &PruneError{Err: err})
	}
	span.SetAttributes(attribute.Int("gitsync.deletions", len(plan.Deletions)))
	done := func() {}
	if opts.OnPrune != nil {
		done = opts.OnPrune(len(plan.Deletions))
	}
	pruned, err := plan.Execute(ctx, opts.Client)
	done()
	crashpoint.Hit(crashpoint.AfterPrune)
	if pruned == nil {
		return save(old.Union(applied), &PruneError{Err: errors.Join(err, errors.New("prune returned no result"))})
	}
	res.Pruned = pruned
	if err != nil {
		err = &PruneError{Err: err}
	}
	return save(pruned.Remaining, err)
}

// pendingEntries are the entries recorded before the apply: every desired
// object the stored inventory does not list yet, except those annotated
// gitsync.dev/prune: disabled (never tracked), those annotated
// gitsync.dev/apply: disabled (never written; one gitsync applied before
// is in stored already) and those of unknown kinds (Apply skips them).
func pendingEntries(desired []*unstructured.Unstructured, ids []object.ID, stored *inventory.Inventory) []inventory.Entry {
	var out []inventory.Entry
	for i, obj := range desired {
		if ids[i] == (object.ID{}) || stored.Has(ids[i]) || inventory.PruneDisabled(obj.GetAnnotations()) {
			continue
		}
		if p, _ := drift.PolicyOf(obj.GetAnnotations()); p == drift.Disabled {
			continue
		}
		out = append(out, inventory.Entry{ID: ids[i], Version: obj.GroupVersionKind().Version, Pending: true})
	}
	return out
}

// withoutUnapplied drops from old the pending entries this run recorded
// for objects Apply then did not write under that ID: skipped ones (their
// kind is not served, their CRD failed), which would otherwise wait for a
// kind that may never be served, and those applied under another ID (the
// kind's scope changed in between), which the applied entry replaces.
func withoutUnapplied(old, stored *inventory.Inventory, ids []object.ID, cs *apply.ChangeSet) *inventory.Inventory {
	drop := map[object.ID]bool{}
	for i, e := range cs.Entries {
		if i >= len(ids) || ids[i] == (object.ID{}) || stored.Has(ids[i]) {
			continue
		}
		// An entry without an action was never reached (the run stopped):
		// its ID is the manifest's, not yet resolved, and it stays pending.
		if e.Action == apply.Skipped || (e.Action != "" && e.ID != ids[i]) {
			drop[ids[i]] = true
		}
	}
	if len(drop) == 0 {
		return old
	}
	kept := make([]inventory.Entry, 0, old.Len())
	for _, e := range old.Entries {
		if !drop[e.ID] {
			kept = append(kept, e)
		}
	}
	return inventory.New(kept...)
}

// appliedInventory lists the objects that exist as applied, with their live
// UIDs: created, configured or found unchanged. Objects annotated
// gitsync.dev/prune: disabled are left out: they are never pruned, so not
// tracked.
func appliedInventory(desired []*unstructured.Unstructured, cs *apply.ChangeSet) *inventory.Inventory {
	entries := make([]inventory.Entry, 0, len(desired))
	for i, e := range cs.Entries {
		if e.UID == "" || e.Action == apply.Failed || e.Action == apply.Skipped || i >= len(desired) {
			continue
		}
		if inventory.PruneDisabled(desired[i].GetAnnotations()) {
			continue
		}
		entries = append(entries, inventory.Entry{ID: e.ID, UID: e.UID, Version: desired[i].GroupVersionKind().Version})
	}
	return inventory.New(entries...)
}

// holdGate wraps gate so that a hold is noted in res.Held; nil stays nil.
func holdGate(gate apply.WaveGate, res *Result) apply.WaveGate {
	if gate == nil {
		return nil
	}
	return func(ctx context.Context, done, next int, cs *apply.ChangeSet) bool {
		goOn := gate(ctx, done, next, cs)
		res.Held = !goOn
		return goOn
	}
}
