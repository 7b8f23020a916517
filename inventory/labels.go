package inventory

import "fmt"

// Owner labels mark every object a sync applied; pruning requires them to
// still carry this sync's values.
const (
	// NameLabel carries the owning GitSync's (or CLI sync's) name.
	NameLabel = "gitsync.dev/name"
	// NamespaceLabel carries the owning GitSync's namespace (or the CLI
	// sync's namespace).
	NamespaceLabel = "gitsync.dev/namespace"
	// OwnerKindLabel set to OwnerKindCLI marks an object applied by
	// `gitsync apply --name`; without it the owner is a GitSync. It keeps a
	// CLI inventory and a GitSync of the same name and namespace apart.
	OwnerKindLabel = "gitsync.dev/owner-kind"
	// OwnerKindCLI is the OwnerKindLabel value of CLI inventories.
	OwnerKindCLI = "cli"
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

// ownerLabelKeys are every label that says who owns an object.
var ownerLabelKeys = []string{NameLabel, NamespaceLabel, OwnerKindLabel}

// OwnerLabelKeys returns the keys of every owner label, for code that must
// carry ownership over unchanged.
func OwnerLabelKeys() []string { return append([]string(nil), ownerLabelKeys...) }

// Owner is the one sync an object belongs to: a GitSync, or the inventory
// of `gitsync apply --name` (CLI). An object has at most one owner, named by
// its owner labels.
type Owner struct {
	Namespace, Name string
	// CLI marks the inventory of `gitsync apply --name NAME -n NAMESPACE`
	// (kept in a ConfigMap), distinct from a GitSync NAMESPACE/NAME.
	CLI bool
}

// GitSyncOwner is the owner identity of the GitSync namespace/name.
func GitSyncOwner(namespace, name string) Owner { return Owner{Namespace: namespace, Name: name} }

// CLIOwner is the owner identity of `gitsync apply --name name -n namespace`.
func CLIOwner(namespace, name string) Owner {
	return Owner{Namespace: namespace, Name: name, CLI: true}
}

// Labels returns the owner labels that mark an object as o's.
func (o Owner) Labels() map[string]string {
	l := map[string]string{NameLabel: o.Name, NamespaceLabel: o.Namespace}
	if o.CLI {
		l[OwnerKindLabel] = OwnerKindCLI
	}
	return l
}

// Owns reports whether labels name exactly o as the owner. Both the name and
// the namespace label must be present: a missing namespace label never
// matches an empty namespace, and an empty name never matches anything.
func (o Owner) Owns(labels map[string]string) bool {
	got, ok := OwnerOf(labels)
	return ok && o.Name != "" && got == o
}

// ownsRecorded is Owns for an object o recorded with its UID: a CLI
// inventory also owns its objects labelled before OwnerKindLabel existed
// (name and namespace, no kind), since the recorded UID proves they are its.
func (o Owner) ownsRecorded(labels map[string]string) bool {
	if o.Owns(labels) {
		return true
	}
	_, hasKind := labels[OwnerKindLabel]
	return o.CLI && !hasKind && GitSyncOwner(o.Namespace, o.Name).Owns(labels)
}

// OwnerOf returns the owner labels name, if any. An object with a name label
// but no namespace label has an owner with an unknown namespace: it is
// nobody's to take.
func OwnerOf(labels map[string]string) (Owner, bool) {
	name, ok := labels[NameLabel]
	if !ok {
		return Owner{}, false
	}
	namespace, okNS := labels[NamespaceLabel]
	if !okNS {
		namespace = "<none>"
	}
	return Owner{Namespace: namespace, Name: name, CLI: labels[OwnerKindLabel] == OwnerKindCLI}, true
}

// String names the owner for messages: "GitSync prod/web" or
// "gitsync apply --name web -n prod".
func (o Owner) String() string {
	if o.CLI {
		return fmt.Sprintf("gitsync apply --name %s -n %s", o.Name, o.Namespace)
	}
	return fmt.Sprintf("GitSync %s/%s", o.Namespace, o.Name)
}

// OwnerLabels returns the labels that mark an object as applied by the
// GitSync named name in namespace.
func OwnerLabels(name, namespace string) map[string]string {
	return GitSyncOwner(namespace, name).Labels()
}

// OwnedBy reports whether labels carry exactly the owner labels of the
// GitSync namespace/name.
func OwnedBy(labels map[string]string, name, namespace string) bool {
	return GitSyncOwner(namespace, name).Owns(labels)
}

// PruneDisabled reports whether annotations opt an object out of pruning.
func PruneDisabled(annotations map[string]string) bool {
	return annotations[PruneAnnotation] == PruneDisabledValue
}
