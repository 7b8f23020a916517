package controller

import (
	"context"
	"fmt"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/cluster"
	"gitsync.dev/gitsync/prepare"
	"gitsync.dev/gitsync/source"
	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/chartrepo"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/render"
)

// getCapped returns the artifact of rev when it holds no more objects than
// gs's cap. A revision over the agent's cap already failed to render (a
// render.Error naming --max-objects); one over a lower
// spec.maxObjects fails here the same way, naming that field.
func (r *GitSyncReconciler) getCapped(ctx context.Context, gs *v1.GitSync, st *syncState, tgt *cluster.Target, src git.Source, rev git.Revision, charts chartrepo.Access) (*source.Artifact, error) {
	limit, err := prepare.MaxObjects(gs, r.opts.MaxObjects)
	if err != nil {
		return nil, stalled(v1.ReasonInvalidSpec, err)
	}
	settings, err := prepare.Settings(gs)
	if err != nil {
		return nil, stalled(v1.ReasonInvalidSpec, err)
	}
	settings.Charts = charts // spec.helm.repositories, read by the caller
	capsErr := withCapabilities(ctx, &settings, tgt)
	// Render children are shared fairly between namespaces (source/sandbox).
	ctx = budget.WithOwner(ctx, gs.Namespace)
	var art *source.Artifact
	if rev.IsArtifact() {
		a := st.artifact()
		if a == nil {
			return nil, retry(v1.ReasonFetchFailed, fmt.Errorf("%s: artifact not resolved yet", rev))
		}
		art, err = r.opts.Cache.GetPulled(ctx, src, rev, a.pull(rev), settings)
	} else {
		if rev.Chart != "" { // spec.helm.chart renders the path's values (helmchart.go)
			if settings.Helm.Chart, err = helmChartOf(st, rev); err != nil {
				return nil, err
			}
			rev.Chart = "" // the cache keys the chart by the settings
		}
		art, err = r.opts.Cache.GetRevisionWith(ctx, src, rev, settings)
	}
	if err != nil {
		return nil, err
	}
	if err := renderedWith(art, capsErr); err != nil {
		return nil, err
	}
	if n := len(art.Rendered.Objects); n > limit {
		return nil, &render.Error{Class: render.ErrTooLarge, Path: src.Path,
			Detail: fmt.Sprintf("%d objects, more than %d", n, limit),
			Err:    &render.ObjectLimitError{Max: limit, Setting: "spec.maxObjects"}}
	}
	return art, nil
}
