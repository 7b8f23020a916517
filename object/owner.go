package object

import (
	"fmt"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// ownerLabelKeys are every label that says who owns an object.
var ownerLabelKeys = []string{v1.LabelName, v1.LabelNamespace, v1.LabelOwnerKind}

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
	l := map[string]string{v1.LabelName: o.Name, v1.LabelNamespace: o.Namespace}
	if o.CLI {
		l[v1.LabelOwnerKind] = v1.OwnerKindCLI
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

// OwnsRecorded is Owns for an object o recorded with its UID: a CLI
// inventory also owns its objects labelled before v1.LabelOwnerKind existed
// (name and namespace, no kind), since the recorded UID proves they are its.
func (o Owner) OwnsRecorded(labels map[string]string) bool {
	if o.Owns(labels) {
		return true
	}
	_, hasKind := labels[v1.LabelOwnerKind]
	return o.CLI && !hasKind && GitSyncOwner(o.Namespace, o.Name).Owns(labels)
}

// OwnerOf returns the owner labels name, if any. An object with a name label
// but no namespace label has an owner with an unknown namespace: it is
// nobody's to take.
func OwnerOf(labels map[string]string) (Owner, bool) {
	name, ok := labels[v1.LabelName]
	if !ok {
		return Owner{}, false
	}
	namespace, okNS := labels[v1.LabelNamespace]
	if !okNS {
		namespace = "<none>"
	}
	return Owner{Namespace: namespace, Name: name, CLI: labels[v1.LabelOwnerKind] == v1.OwnerKindCLI}, true
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
