package controller

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/prepare"
)

// pruneRails are the prune options every deletion on behalf of gs uses,
// its syncs' prunes and its finalizer's cascade alike: gs as the owner, the
// agent's share limit or gs's override, and the protection of gs itself,
// the GitSync CRD and the agent's own footing. An invalid override is
// returned as a Stalled error with the agent's limit in place.
func (r *GitSyncReconciler) pruneRails(gs *v1.GitSync) (inventory.PruneOptions, error) {
	opts, err := prepare.PruneOptions(gs, prepare.Rails{MaxShare: r.opts.PruneMaxShare,
		AgentNamespace: r.opts.AgentNamespace, AgentServiceAccount: r.opts.AgentServiceAccount})
	if err != nil {
		return opts, stalled(v1.ReasonInvalidSpec, err)
	}
	return opts, nil
}

// emitKept records a Warning event for each object that left Git but was
// kept because it is protected (the GitSync itself, the agent's footing):
// the user removed it from Git and must learn why it is still there. It is
// said once: a kept object leaves the inventory.
func (r *GitSyncReconciler) emitKept(gs *v1.GitSync, pruned *inventory.PruneResult) {
	if pruned == nil {
		return
	}
	for _, e := range pruned.Entries {
		if e.Action == inventory.ActionKept && strings.HasPrefix(e.Reason, inventory.ProtectedReasonPrefix) {
			r.recorder.Eventf(gs, nil, corev1.EventTypeWarning, v1.ReasonPruneProtected, "Prune", "%s left the source but was kept: %s", e.ID, e.Reason)
		}
	}
}
