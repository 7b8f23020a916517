package inventory

import (
	"cmp"
	"slices"

	"gitsync.dev/gitsync/object"
)

// Stage orders deletions: the reverse of the order objects are applied in
// (object.Order), so nothing is deleted while something that depends on it
// still exists.
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

// StageOf returns the deletion stage of an object: its place in the one
// order table (object.OrderOf), reversed, with the cluster's setup and its
// other objects in one stage.
func StageOf(id object.ID) Stage {
	switch object.OrderOf(id) {
	case object.OrderCustomResources:
		return StageCustomResources
	case object.OrderNamespaced:
		return StageNamespaced
	case object.OrderCluster, object.OrderClusterSetup:
		return StageCluster
	default:
		return StageDefinitions
	}
}

// sortDeletions orders deletions by stage, then by ID, so a plan reads and
// runs the same way every time.
func sortDeletions(ds []Deletion) {
	slices.SortFunc(ds, func(a, b Deletion) int {
		return cmp.Or(cmp.Compare(a.Stage, b.Stage), compareIDs(a.ID, b.ID))
	})
}
