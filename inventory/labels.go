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
	// PruneDisabledValue is the PruneAnnotation value that disables pruning.
	PruneDisabledValue = "disabled"
	// InventoryLabel marks a ConfigMap as the inventory of the CLI sync named
	// by its value.
	InventoryLabel = "gitsync.dev/inventory"
	// PruneMaxShareAnnotation on a GitSync overrides the agent's prune share
	// limit for that sync: a number in [0, 1], "1" or "0" letting one large
	// intentional removal through.
	PruneMaxShareAnnotation = "gitsync.dev/prune-max-share"
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
// Both labels must be present: a missing namespace label never matches an
// empty namespace, and an empty name never matches anything.
func OwnedBy(labels map[string]string, name, namespace string) bool {
	gotName, okName := labels[NameLabel]
	gotNamespace, okNamespace := labels[NamespaceLabel]
	return name != "" && okName && okNamespace && gotName == name && gotNamespace == namespace
}

// PruneDisabled reports whether annotations opt an object out of pruning.
func PruneDisabled(annotations map[string]string) bool {
	return annotations[PruneAnnotation] == PruneDisabledValue
}
