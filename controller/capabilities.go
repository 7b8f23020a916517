package controller

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/cluster"
	"gitsync.dev/gitsync/source"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/render"
)

// withCapabilities gives a chart of s the capabilities of the cluster tgt
// writes to (cluster.Target.Capabilities: read once per cluster, kept until
// what it serves changes), so it renders as `helm install` would there. A
// failed read leaves s as it is and is returned: renderedWith refuses a
// chart rendered without them, and a plain path needs none.
func withCapabilities(ctx context.Context, s *render.Settings, tgt *cluster.Target) error {
	caps, err := tgt.Capabilities(ctx)
	if err != nil {
		return fmt.Errorf("helm capabilities of the target cluster: %w", err)
	}
	if s.Helm != nil {
		h := *s.Helm
		h.Capabilities = caps
		s.Helm = &h
	}
	return nil
}

// renderedWith refuses art when it is a chart's render and capsErr says
// the target's capabilities could not be read: rendered with Helm's
// defaults, it could leave out what the cluster serves, and its objects
// would be pruned. Retried: discovery answers again soon.
func renderedWith(art *source.Artifact, capsErr error) error {
	if capsErr == nil || !strings.HasPrefix(art.ContentKey, git.ChartKeyPrefix) {
		return nil
	}
	return retry(v1.ReasonRenderFailed, capsErr)
}

// capabilitiesChanged requeues GitSyncs whose cluster started or stopped
// serving an API: their next reconcile renders a chart with the new
// capabilities (the render cache keys it by them) and applies the
// difference; other paths render from the cache as before and write
// nothing. The revision is not asked for again.
func (r *GitSyncReconciler) capabilitiesChanged(keys []types.NamespacedName) {
	for _, key := range keys {
		r.enqueue(key)
	}
}
