package apply

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"gitsync.dev/gitsync/object"
)

// IDs returns, without writing anything, the ID under which Apply would
// write each object: its namespace defaulted for namespaced kinds and
// cleared for cluster-scoped ones. A kind the cluster does not serve yet
// takes its scope from a CustomResourceDefinition in objs (created in
// Apply's first stage). The ID is zero when the kind is unknown either way:
// Apply skips such an object. Callers record the IDs before the apply.
func (a *Applier) IDs(objs []*unstructured.Unstructured) []object.ID {
	defined := definedScopes(objs)
	ids := make([]object.ID, len(objs))
	for i, obj := range objs {
		gvk := obj.GroupVersionKind()
		namespaced, ok := defined[gvk.GroupKind()]
		if m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			namespaced, ok = m.Scope.Name() == meta.RESTScopeNameNamespace, true
		}
		if !ok {
			continue
		}
		id := object.IDOf(obj)
		switch {
		case !namespaced:
			id.Namespace = ""
		case id.Namespace == "":
			id.Namespace = a.opts.DefaultNamespace
		}
		ids[i] = id
	}
	return ids
}

// Prepared returns copies of objs as Apply would send them, writing
// nothing: each placed where IDs places it (namespace defaulted for a
// namespaced kind, cleared for a cluster-scoped one) and carrying
// Options.OwnerLabels. An object of a kind IDs does not know keeps its
// namespace (Apply would skip it). Without OwnerLabels Apply also keeps the
// owner labels the live object carries, which Prepared, reading no live
// object, does not add.
func (a *Applier) Prepared(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	ids := a.IDs(objs)
	out := make([]*unstructured.Unstructured, len(objs))
	for i, obj := range objs {
		out[i] = WithOwnerLabels(obj, a.opts.OwnerLabels)
		if ids[i] != (object.ID{}) {
			out[i].SetNamespace(ids[i].Namespace)
		}
	}
	return out
}

// definedScopes returns whether each kind defined by a CRD in objs is
// namespaced.
func definedScopes(objs []*unstructured.Unstructured) map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for _, obj := range objs {
		if obj.GroupVersionKind().GroupKind() != object.CRDKind {
			continue
		}
		group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(obj.Object, "spec", "scope")
		if group != "" && kind != "" {
			out[schema.GroupKind{Group: group, Kind: kind}] = scope != "Cluster"
		}
	}
	return out
}
