package apply

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// stage orders application: every object of an earlier stage is applied (and
// CRDs are Established) before the next stage starts.
type stage int

const (
	// stageCluster holds what other objects need to exist first: CRDs,
	// Namespaces and cluster-wide classes and roles.
	stageCluster stage = iota
	// stageRest holds everything else.
	stageRest
	numStages
)

var (
	crdGK       = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
	namespaceGK = schema.GroupKind{Group: "", Kind: "Namespace"}
)

// firstStage lists the kinds applied in stageCluster; every other kind falls
// back to stageRest.
var firstStage = map[schema.GroupKind]bool{
	crdGK:       true,
	namespaceGK: true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                  true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                     true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:               true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:              true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                     true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:        true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: true,
	{Group: "gateway.networking.k8s.io", Kind: "GatewayClass"}:       true,
}

func stageOf(obj *unstructured.Unstructured) stage {
	if firstStage[obj.GroupVersionKind().GroupKind()] {
		return stageCluster
	}
	return stageRest
}

// crdKind returns the GroupKind a CRD object defines.
func crdKind(obj *unstructured.Unstructured) schema.GroupKind {
	group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
	return schema.GroupKind{Group: group, Kind: kind}
}
