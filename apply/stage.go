package apply

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"gitsync.dev/gitsync/object"
)

// stage orders application: every object of an earlier stage is applied (and
// CRDs are Established) before the next stage starts.
type stage int

const (
	// stageCluster holds what other objects need to exist first: CRDs,
	// Namespaces, APIServices and cluster-wide classes and roles.
	stageCluster stage = iota
	// stageRest holds everything else.
	stageRest
	numStages
)

// stageOf returns obj's stage: the definitions and the cluster's setup of
// the one order table (object.OrderOf) go first, everything else after.
func stageOf(obj *unstructured.Unstructured) stage {
	if object.OrderOf(object.IDOf(obj)) <= object.OrderClusterSetup {
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
