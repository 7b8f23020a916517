package controller

import (
	"context"
	"fmt"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/render"
)

// maxObjectsOf is gs's object cap: spec.maxObjects when set, else the
// agent's. A GitSync may only lower the agent's cap: the shared render
// cache renders every revision under the agent's cap, which is what bounds
// the agent's memory.
func (r *GitSyncReconciler) maxObjectsOf(gs *v1.GitSync) (int, error) {
	agentMax := r.opts.MaxObjects
	if gs.Spec.MaxObjects == nil {
		return agentMax, nil
	}
	n := int(*gs.Spec.MaxObjects)
	if n < 1 || n > agentMax {
		return 0, stalled(v1.ReasonInvalidSpec, fmt.Errorf(
			"spec.maxObjects %d is above the agent's cap of %d objects per revision (gitsync run --max-objects); it may only lower it", n, agentMax))
	}
	return n, nil
}

// getCapped returns the artifact of rev when it holds no more objects than
// gs's cap. A revision over the agent's cap already failed to render (a
// render.Error naming --max-objects); one over a lower
// spec.maxObjects fails here the same way, naming that field.
func (r *GitSyncReconciler) getCapped(ctx context.Context, gs *v1.GitSync, src git.Source, rev git.Revision) (*source.Artifact, error) {
	limit, err := r.maxObjectsOf(gs)
	if err != nil {
		return nil, err
	}
	settings, err := RenderSettings(gs) // render_settings.go
	if err != nil {
		return nil, err
	}
	art, err := r.opts.Cache.GetRevisionWith(ctx, src, rev, settings)
	if err != nil {
		return nil, err
	}
	if n := len(art.Rendered.Objects); n > limit {
		return nil, &render.Error{Class: render.ErrTooLarge, Path: src.Path,
			Detail: fmt.Sprintf("%d objects, more than %d", n, limit),
			Err:    &render.ObjectLimitError{Max: limit, Setting: "spec.maxObjects"}}
	}
	return art, nil
}
