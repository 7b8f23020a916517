package apply

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// existedBefore reports whether out, the object a server-side apply
// returned for an object the live reader did not have, existed before that
// apply. The live reader can miss an existing object (the agent's cache
// holds only objects with the owner label, so an object created by kubectl
// is invisible until it is adopted); the apply then configured it, not
// created it.
//
// The rule reads only the response, so it costs no request and no clock of
// ours: an apply that creates an object leaves exactly one managedFields
// entry (fieldManager's), generation 1 (or none) and that entry's time within
// a second of creationTimestamp (both are stamped by the same request and
// kept to the second). So the object existed before when any of these fail:
//   - another manager owns fields of it;
//   - its generation is above 1;
//   - fieldManager's entry is at least two seconds younger than the object.
//
// An object that only gitsync ever wrote, whose owner label was removed out
// of band less than two seconds after it was created, is the one case still
// reported as created.
func existedBefore(out *unstructured.Unstructured, fieldManager string) bool {
	if out == nil {
		return false
	}
	if out.GetGeneration() > 1 {
		return true
	}
	created := out.GetCreationTimestamp().Time
	for _, mf := range out.GetManagedFields() {
		if mf.Manager != fieldManager {
			return true
		}
		if mf.Time != nil && !created.IsZero() && mf.Time.Time.Sub(created) >= 2*time.Second {
			return true
		}
	}
	return false
}
