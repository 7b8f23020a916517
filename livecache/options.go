package livecache

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// Options returns the cache options of the agent's manager:
// GitSyncs as gitsyncs selects them (namespaces, a shard label; all of them
// when it sets no label), and of every other kind only the objects carrying
// the owner label v1.LabelName. The appliers, drift watches and
// health checks read managed objects from that cache, so the agent's memory
// follows what it manages, not the size of the cluster (without it, applying
// one ConfigMap caches every ConfigMap in the cluster).
//
// What the agent reads that is not managed goes around the cache: Secrets
// (source credentials, kubeconfigs, webhook tokens) through the manager's
// API reader, prune decisions through a direct client. An object that
// exists without the owner label (created by kubectl, to be adopted) is
// therefore invisible to the cache; the applier sees it as missing, applies
// it (which adopts it) and reports it as configured from the apply's
// response (apply.Options.FieldManager).
//
// Cached objects keep only what the agent reads (CompactLive): gitsync's
// own managedFields entries, not other managers' nor kubectl's
// last-applied annotation.
func Options(gitsyncs cache.ByObject) cache.Options {
	if gitsyncs.Label == nil {
		gitsyncs.Label = labels.Everything()
	}
	return cache.Options{
		DefaultLabelSelector: ManagedSelector(),
		DefaultTransform:     CompactLive,
		ByObject:             map[client.Object]cache.ByObject{&v1.GitSync{}: gitsyncs},
	}
}

// ManagedSelector selects the objects some GitSync manages: those with the
// owner label v1.LabelName.
func ManagedSelector() labels.Selector {
	req, err := labels.NewRequirement(v1.LabelName, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant, valid label key
	}
	return labels.NewSelector().Add(*req)
}
