package inventory

// Owner labels mark every object a sync applied; pruning requires both to
// still carry this sync's values.
const (
	// NameLabel carries the owning GitSync's (or CLI sync's) name.
	NameLabel = "gitsync.dev/name"
	// NamespaceLabel carries the owning GitSync's namespace.
	NamespaceLabel = "gitsync.dev/namespace"
	// PruneAnnotation set to "disabled" keeps an object when it leaves Git
	// (and keeps it out of the inventory).
	PruneAnnotation = "gitsync.dev/prune"
	// Finalizer guards a GitSync until its inventory was pruned or orphaned.
	Finalizer = "gitsync.dev/finalizer"
	// FieldManager is the server-side apply field manager gitsync writes as.
	FieldManager = "gitsync"
)

// OwnerLabels returns the labels that mark an object as applied by the sync
// named name in namespace.
func OwnerLabels(name, namespace string) map[string]string {
	return map[string]string{NameLabel: name, NamespaceLabel: namespace}
}

// OwnedBy reports whether labels carry exactly the given sync's owner labels.
func OwnedBy(labels map[string]string, name, namespace string) bool {
	return labels[NameLabel] == name && labels[NamespaceLabel] == namespace
}
