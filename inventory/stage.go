package inventory

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"gitsync.dev/gitsync/object"
)

// Stage orders deletions: the reverse of the order objects are applied in,
// so nothing is deleted while something that depends on it still exists.
type Stage int

const (
	// StageCustomResources holds objects of kinds that are not built into
	// Kubernetes (custom or aggregated resources): they go before their
	// definitions and before the namespaced objects they may manage.
	StageCustomResources Stage = iota
	// StageNamespaced holds built-in namespaced objects.
	StageNamespaced
	// StageCluster holds built-in cluster-scoped objects: classes, cluster
	// roles, webhook configurations.
	StageCluster
	// StageDefinitions holds Namespaces, CRDs and APIServices: deleting one
	// cascades to everything inside, so they go last.
	StageDefinitions
)

var stageNames = [...]string{"custom resources", "namespaced objects", "cluster objects", "definitions"}

func (s Stage) String() string {
	if s < 0 || int(s) >= len(stageNames) {
		return "unknown"
	}
	return stageNames[s]
}

// definitionKinds are the kinds whose deletion cascades.
var definitionKinds = map[schema.GroupKind]bool{
	{Group: "", Kind: "Namespace"}:                                    true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:             true,
}

// builtinGroups are the API groups served by kube-apiserver itself.
var builtinGroups = map[string]bool{
	"": true, "apps": true, "batch": true, "autoscaling": true, "policy": true, "extensions": true,
	"admissionregistration.k8s.io": true, "apiextensions.k8s.io": true, "apiregistration.k8s.io": true,
	"authentication.k8s.io": true, "authorization.k8s.io": true, "certificates.k8s.io": true,
	"coordination.k8s.io": true, "discovery.k8s.io": true, "events.k8s.io": true,
	"flowcontrol.apiserver.k8s.io": true, "internal.apiserver.k8s.io": true,
	"networking.k8s.io": true, "node.k8s.io": true, "rbac.authorization.k8s.io": true,
	"resource.k8s.io": true, "scheduling.k8s.io": true, "storage.k8s.io": true,
	"storagemigration.k8s.io": true,
}

// StageOf returns the deletion stage of an object.
func StageOf(id object.ID) Stage {
	switch {
	case definitionKinds[id.GroupKind()]:
		return StageDefinitions
	case !builtinGroups[id.Group]:
		return StageCustomResources
	case id.Namespace != "":
		return StageNamespaced
	default:
		return StageCluster
	}
}

// sortDeletions orders deletions by stage, then by ID, so a plan reads and
// runs the same way every time.
func sortDeletions(ds []Deletion) {
	slices.SortFunc(ds, func(a, b Deletion) int {
		return cmp.Or(cmp.Compare(a.Stage, b.Stage), compareIDs(a.ID, b.ID))
	})
}
