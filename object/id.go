package object

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ID names one Kubernetes object independent of its version: the key of
// inventories, change sets and error messages.
type ID struct {
	Group     string `json:"group"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// IDOf returns the ID of an object.
func IDOf(obj *unstructured.Unstructured) ID {
	gvk := obj.GroupVersionKind()
	return ID{Group: gvk.Group, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// GroupKind returns the ID's group and kind.
func (id ID) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: id.Group, Kind: id.Kind}
}

// String is the human subject used in change sets, logs and errors:
// "Kind/namespace/name" for namespaced objects, "Kind/name" for cluster-scoped
// ones, with ".group" appended to the kind outside the core and apps groups
// only when it is needed to tell kinds apart (e.g. "Certificate.cert-manager.io/ns/x").
func (id ID) String() string {
	kind := id.Kind
	if id.Group != "" && id.Group != "apps" && !wellKnownGroups[id.Group] {
		kind = id.Kind + "." + id.Group
	}
	if id.Namespace == "" {
		return kind + "/" + id.Name
	}
	return kind + "/" + id.Namespace + "/" + id.Name
}

// wellKnownGroups are built-in API groups whose kinds are unambiguous, so the
// subject stays as short as kubectl prints it.
var wellKnownGroups = map[string]bool{
	"apps": true, "batch": true, "policy": true, "autoscaling": true,
	"networking.k8s.io": true, "rbac.authorization.k8s.io": true,
	"storage.k8s.io": true, "scheduling.k8s.io": true, "apiextensions.k8s.io": true,
	"admissionregistration.k8s.io": true, "coordination.k8s.io": true,
	"discovery.k8s.io": true, "node.k8s.io": true,
}

// Key is the stable, unambiguous string form stored in inventories:
// "namespace_name_group_kind" (namespace and group may be empty). Namespaces,
// groups and kinds cannot contain "_"; a few kinds (RBAC roles, for one) allow
// it in names, so the name is everything between the first and the
// second-to-last separator.
func (id ID) Key() string {
	return strings.Join([]string{id.Namespace, id.Name, id.Group, id.Kind}, "_")
}

// ParseKey parses the form produced by Key.
func ParseKey(s string) (ID, error) {
	parts := strings.Split(s, "_")
	if len(parts) < 4 {
		return ID{}, fmt.Errorf("inventory key %q is not namespace_name_group_kind", s)
	}
	n := len(parts)
	id := ID{
		Namespace: parts[0],
		Name:      strings.Join(parts[1:n-2], "_"),
		Group:     parts[n-2],
		Kind:      parts[n-1],
	}
	if id.Name == "" || id.Kind == "" {
		return ID{}, fmt.Errorf("inventory key %q is not namespace_name_group_kind", s)
	}
	return id, nil
}
