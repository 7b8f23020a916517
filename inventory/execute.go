package inventory

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/object"
)

// Execute deletes the plan's objects stage by stage (custom resources,
// namespaced objects, cluster objects, then Namespaces/CRDs), each with UID
// and resourceVersion preconditions and background propagation, and waits by
// watch for each stage's objects to be gone, bounded by Timeout per stage.
//
// A Namespace or CRD is re-checked right before its delete and is not
// deleted while it still holds anything (such as an object of an earlier
// stage that failed). The result has an entry for every stale object; the
// error joins the per-object failures, which stay in Result.Remaining.
//
// c must read from the apiserver directly and be able to watch
// (client.NewWithWatch).
func (p *PrunePlan) Execute(ctx context.Context, c client.WithWatch) (*PruneResult, error) {
	res := &PruneResult{Entries: append([]PruneEntry(nil), p.Skipped...)}
	// stay are the stale entries still in the cluster: failures (retried
	// next time) and, in a dry run, everything.
	stay := append([]Entry(nil), p.failed...)
	for _, stage := range p.stages() {
		outcomes := p.runStage(ctx, c, stage)
		for i, out := range outcomes {
			res.Entries = append(res.Entries, out)
			if out.Action == ActionFailed || (p.opts.DryRun && out.Action == ActionPruned) {
				stay = append(stay, stage[i].entry)
			}
		}
	}
	res.Remaining = New(append(append([]Entry(nil), p.Desired.entries()...), stay...)...)
	var errs []error
	for _, e := range res.Entries {
		if (e.Action == ActionFailed || e.Action == ActionUnknown) && e.Err != nil {
			errs = append(errs, e.Err)
		}
	}
	return res, errors.Join(errs...)
}

// stages splits the sorted deletions into runs of one stage each.
func (p *PrunePlan) stages() [][]Deletion {
	var out [][]Deletion
	for i, d := range p.Deletions {
		if i == 0 || d.Stage != p.Deletions[i-1].Stage {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], d)
	}
	return out
}

// runStage deletes one stage's objects in parallel and waits for them.
func (p *PrunePlan) runStage(ctx context.Context, c client.WithWatch, stage []Deletion) []PruneEntry {
	if p.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.opts.Timeout)
		defer cancel()
	}
	out := make([]PruneEntry, len(stage))
	g := errgroup.Group{}
	g.SetLimit(p.opts.concurrency())
	for i, d := range stage {
		g.Go(func() error {
			out[i] = p.prune(ctx, c, d)
			return nil
		})
	}
	_ = g.Wait() // prune reports per object
	return out
}

// prune deletes one object and waits until it is gone.
func (p *PrunePlan) prune(ctx context.Context, c client.WithWatch, d Deletion) PruneEntry {
	failed := func(reason string, err error) PruneEntry {
		return PruneEntry{ID: d.ID, Action: ActionFailed, Reason: reason, Err: objectError(d.ID, "prune", err)}
	}
	if d.Stage == StageDefinitions {
		// Everything this plan deletes is gone by now, so anything left
		// inside blocks, whether foreign, new, or ours and failed. A dry
		// run deleted nothing, so it discounts the plan's deletions.
		var deleting map[object.ID]types.UID
		if p.opts.DryRun {
			deleting = deletionSet(p.Deletions)
		}
		reason, err := p.definitionBlocked(ctx, c, d, deleting)
		if err != nil {
			return failed("could not check contents", err)
		}
		if reason != "" {
			return failed(reason, errors.New(reason))
		}
	}
	outcome, err := p.deleteOwned(ctx, c, d)
	if err != nil {
		return failed("delete failed", err)
	}
	if outcome.Action != "" {
		return outcome
	}
	if p.opts.DryRun {
		return PruneEntry{ID: d.ID, Action: ActionPruned, Reason: "dry run: would be deleted"}
	}
	if self := p.opts.Protect.Self; self != nil && d.ID == *self {
		// Pruning its own GitSync (consented): its finalizer runs in a
		// later reconcile, so waiting here would wait on ourselves.
		return PruneEntry{ID: d.ID, Action: ActionPruned, Reason: "deletion requested; its finalizer completes it"}
	}
	if err := waitGone(ctx, c, d); err != nil {
		return failed(err.Error(), err)
	}
	return PruneEntry{ID: d.ID, Action: ActionPruned, Reason: fmt.Sprintf("deleted (%s)", d.Stage)}
}

// listGVK is the list kind of gvk.
func listGVK(gvk schema.GroupVersionKind) schema.GroupVersionKind {
	return gvk.GroupVersion().WithKind(gvk.Kind + "List")
}
