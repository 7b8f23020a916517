package prepare

import (
	"fmt"
	"strconv"
	"strings"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/inventory"
)

// Rails are the operator's prune settings every GitSync starts from.
type Rails struct {
	// MaxShare is the agent's prune share limit (gitsync run
	// --prune-max-share); a GitSync's gitsync.dev/prune-max-share
	// annotation overrides it.
	MaxShare float64
	// AgentNamespace and AgentServiceAccount name the agent's own footing,
	// which prunes never delete; empty when unknown (a laptop).
	AgentNamespace, AgentServiceAccount string
}

// PruneOptions are the prune options every deletion on behalf of gs uses,
// its syncs' prunes and its finalizer's cascade alike: gs as the owner, the
// agent's share limit or gs's override, spec.allowEmpty, and the protection
// of gs itself, the GitSync CRD and the agent's own footing. An invalid
// override is a *SpecError returned with the agent's limit in place.
func PruneOptions(gs *v1.GitSync, rails Rails) (inventory.PruneOptions, error) {
	opts := inventory.DefaultPruneOptions()
	opts.Name, opts.Namespace = gs.Name, gs.Namespace
	self := inventory.GitSyncID(gs.Namespace, gs.Name)
	opts.Protect = inventory.Protection{
		Self:                &self,
		AgentNamespace:      rails.AgentNamespace,
		AgentServiceAccount: rails.AgentServiceAccount,
	}
	opts.AllowEmpty = gs.Spec.AllowEmpty
	opts.MaxShare = rails.MaxShare
	raw, ok := gs.Annotations[v1.AnnotationPruneMaxShare]
	if !ok {
		return opts, nil
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if err != nil || v < 0 || v > 1 {
		return opts, &SpecError{Field: "annotation " + v1.AnnotationPruneMaxShare,
			Err: fmt.Errorf("%q must be a number between 0 and 1", raw)}
	}
	opts.MaxShare = v
	return opts, nil
}
