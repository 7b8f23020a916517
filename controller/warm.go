package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/inventory"
)

// warmKinds starts, as the agent starts, the watch caches of the kinds
// the GitSyncs' inventories record for the local cluster, beside the
// first reconciles instead of inside them: a restarted agent's first
// syncs find the kinds probed and listing (they read through a
// livecache.Reader meanwhile) or listed. It decides nothing: a kind that
// cannot be read is reported by the reconcile that needs it
// (livecache.Kinds.Start is idempotent, and a listing that does not end is
// an error of the next sync of its kind), and a kind no GitSync applies any
// longer is only watched until the agent restarts.
func (r *GitSyncReconciler) warmKinds(mgr manager.Manager) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		list := &v1.GitSyncList{}
		if err := r.client.List(ctx, list); err != nil {
			return nil // the reconciles start the kinds they need
		}
		seen := map[schema.GroupVersionKind]bool{}
		var objs []*unstructured.Unstructured
		for i := range list.Items {
			gs := &list.Items[i]
			if gs.Spec.KubeConfig != nil || gs.Spec.Suspend {
				continue // a remote cluster's cache is started with its target
			}
			inv, err := inventory.FromGitSyncStatus(gs)
			if err != nil || inv == nil {
				continue
			}
			for _, id := range inv.IDs() {
				e, _ := inv.Get(id)
				gvk := id.GroupKind().WithVersion(e.Version) // as the inventory reads it without a mapper
				if e.Version == "" || seen[gvk] {
					continue
				}
				seen[gvk] = true
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(gvk)
				objs = append(objs, u)
			}
		}
		_, _ = r.kinds.Start(ctx, mgr.GetCache(), r.probe, objs)
		return nil
	}))
}
