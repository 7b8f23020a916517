package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/source"
)

// outcome is what one sync did, for status, events and metrics.
type outcome struct {
	// attempted and applied are revisions in Revision.String() form;
	// applied is set only when everything succeeded.
	attempted, applied string
	// inventory to store; nil keeps the stored one.
	inventory *inventory.Inventory
	changes   *apply.ChangeSet
	pruned    *inventory.PruneResult
	err       error
}

func (o *outcome) syncErr() *syncError {
	if o.err == nil {
		return nil
	}
	return asSyncError(o.err, v1.ReasonApplyFailed)
}

// sync runs the pipeline once: resolve, fetch+render, apply, prune, health.
// Nothing is pruned unless resolve, render and apply all succeeded.
func (r *GitSyncReconciler) sync(ctx context.Context, gs *v1.GitSync, st *syncState) *outcome {
	ctx, cancel := context.WithTimeout(ctx, r.timeoutOf(gs))
	defer cancel()
	out := &outcome{}
	refresh := st.needsResolve(gs, r.clock.Now())
	tgt, err := r.targets.get(ctx, r.apiReader, gs, refresh)
	if err != nil {
		out.err = err
		return out
	}
	src, rev, err := r.revision(ctx, gs, st, refresh)
	if err != nil {
		out.err = err
		return out
	}
	out.attempted = rev.String()
	objs, err := r.render(ctx, gs, st, src, rev)
	if err != nil {
		out.err = err
		return out
	}
	old, err := inventoryOf(gs)
	if err != nil {
		out.err = stalled(v1.ReasonInvalidSpec, err)
		return out
	}
	cs, runErr := tgt.applier.Apply(ctx, objs)
	out.changes = cs
	r.opts.Metrics.observeApply(cs)
	applied := appliedInventory(objs, cs)
	if err := errors.Join(classifyApply(cs, runErr), r.drift.ensure(tgt.cache, objs)); err != nil {
		out.inventory, out.err = old.Union(applied), err
		return out
	}
	if out.inventory, out.pruned, out.err = r.prune(ctx, gs, tgt, old, applied); out.err != nil {
		return out
	}
	if gs.Spec.Wait {
		if err := waitHealthy(ctx, tgt.cache, objs, cs); err != nil {
			out.err = retry(v1.ReasonHealthCheckFailed, err)
			return out
		}
	}
	out.applied = rev.String()
	return out
}

// revision returns the source and the revision to sync: freshly resolved
// when refresh is set, else the one resolved last (drift repairs and status
// retries do not ask the remote again before the interval is up).
func (r *GitSyncReconciler) revision(ctx context.Context, gs *v1.GitSync, st *syncState, refresh bool) (source.Source, source.Revision, error) {
	if !refresh {
		src, rev := st.last()
		return src, rev, nil
	}
	st.takeFetchMark()
	now := r.clock.Now()
	src, err := sourceOf(ctx, r.apiReader, gs)
	if err != nil {
		return src, source.Revision{}, err
	}
	rev, err := r.opts.Fetcher.Resolve(ctx, src)
	if err != nil {
		return src, rev, classifyFetch(err)
	}
	st.resolved(gs, src, rev, now)
	return src, rev, nil
}

// render returns the objects of rev; a permanent failure is remembered so
// the same broken commit is not fetched and rendered again.
func (r *GitSyncReconciler) render(ctx context.Context, gs *v1.GitSync, st *syncState, src source.Source, rev source.Revision) ([]*unstructured.Unstructured, error) {
	if err := st.stalledOn(gs.Generation, rev.Commit); err != nil {
		return nil, err
	}
	art, err := r.opts.Cache.GetRevision(ctx, src, rev)
	if err == nil && len(art.Rendered.Objects) == 0 && !gs.Spec.AllowEmpty {
		err = stalled(v1.ReasonRenderFailed, fmt.Errorf("path %q at %s renders no objects (set spec.allowEmpty to sync an empty set)", src.Path, rev))
	}
	if err != nil {
		err = classifyFetch(err)
		if se := asSyncError(err, ""); se.Stalled {
			st.setStalled(gs.Generation, rev.Commit, err)
		}
		return nil, err
	}
	return art.Rendered.Objects, nil
}

// appliedInventory lists the objects apply created, configured or found
// unchanged, with their live UIDs; objects annotated prune: disabled are
// left out, so they are never deleted.
func appliedInventory(objs []*unstructured.Unstructured, cs *apply.ChangeSet) *inventory.Inventory {
	entries := make([]inventory.Entry, 0, len(objs))
	for i, e := range cs.Entries {
		if e.UID == "" || e.Action == apply.Failed || e.Action == apply.Skipped || i >= len(objs) {
			continue
		}
		if inventory.PruneDisabled(objs[i].GetAnnotations()) {
			continue
		}
		entries = append(entries, inventory.Entry{ID: e.ID, UID: e.UID, Version: objs[i].GroupVersionKind().Version})
	}
	return inventory.New(entries...)
}

// prune deletes what old has and applied does not, after a fully
// successful apply. It returns the inventory to store: applied plus
// whatever could not be deleted yet.
func (r *GitSyncReconciler) prune(ctx context.Context, gs *v1.GitSync, tgt *target, old, applied *inventory.Inventory) (*inventory.Inventory, *inventory.PruneResult, error) {
	if !gs.Spec.Prune || len(old.Diff(applied)) == 0 {
		return applied, nil, nil
	}
	opts := inventory.DefaultPruneOptions()
	opts.Name, opts.Namespace = gs.Name, gs.Namespace
	maxShare, err := pruneMaxShare(gs, r.opts.PruneMaxShare)
	if err != nil {
		return old.Union(applied), nil, err
	}
	opts.SyncSucceeded, opts.AllowEmpty, opts.MaxShare = true, gs.Spec.AllowEmpty, maxShare
	plan, err := inventory.Plan(ctx, tgt.direct, old, applied, opts)
	if err != nil {
		keep := old.Union(applied)
		var re *inventory.RefusedError
		if errors.As(err, &re) && re.Keep != nil {
			keep = re.Keep
		}
		return keep, nil, classifyPrune(err)
	}
	res, err := plan.Execute(ctx, tgt.direct)
	if res == nil {
		return old.Union(applied), nil, classifyPrune(err)
	}
	r.opts.Metrics.observePruned(res.Count(inventory.ActionPruned))
	if err != nil {
		return res.Remaining, res, classifyPrune(err)
	}
	return res.Remaining, res, nil
}

// pruneMaxShare is the prune share limit for gs: its
// gitsync.dev/prune-max-share annotation when set, else the agent's default.
func pruneMaxShare(gs *v1.GitSync, def float64) (float64, error) {
	raw, ok := gs.Annotations[inventory.PruneMaxShareAnnotation]
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if err != nil || v < 0 || v > 1 {
		return 0, stalled(v1.ReasonInvalidSpec, fmt.Errorf("annotation %s=%q must be a number between 0 and 1", inventory.PruneMaxShareAnnotation, raw))
	}
	return v, nil
}
