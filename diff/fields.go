package diff

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// maxFields bounds Result.Fields: a message names the first ones.
const maxFields = 20

// AppliedFields returns the fields manager applied to obj (its Apply entry
// of the main resource in managedFields), nil when it has none or obj is
// nil. Package drift decides with it whether an ignored field is gitsync's.
func AppliedFields(obj *unstructured.Unstructured, manager string) *fieldpath.Set {
	if obj == nil {
		return nil
	}
	_, set := ownedSet(obj, manager)
	return set
}

// changedFields names what an apply would change in live, as JSON pointers
// ("/spec/replicas", "/data/password": a path, never a value), sorted and
// at most maxFields (then a last "… and N more"). When only ownership
// would change, it names those fields in server-side apply's notation,
// e.g. "ownership of .spec.replicas".
func changedFields(desired, merged, live *unstructured.Unstructured, manager string) []string {
	_, keepStatus := desired.Object["status"]
	_, keepLastApplied := desired.GetAnnotations()[lastApplied]
	var out []string
	diffPaths(comparable(live, keepStatus, keepLastApplied), comparable(merged, keepStatus, keepLastApplied), "", &out)
	if len(out) == 0 {
		_, after := ownedSet(merged, manager)
		_, before := ownedSet(live, manager)
		if after == nil {
			after = &fieldpath.Set{}
		}
		if before == nil {
			before = &fieldpath.Set{}
		}
		after.Difference(before).Leaves().Union(before.Difference(after).Leaves()).Iterate(func(p fieldpath.Path) {
			out = append(out, "ownership of "+p.String())
		})
	}
	slices.Sort(out)
	if len(out) > maxFields {
		out = append(out[:maxFields], fmt.Sprintf("… and %d more", len(out)-maxFields))
	}
	return out
}

// diffPaths appends the pointers at which a and b differ: a leaf value, a
// field present on one side only, lists of different lengths (the list
// itself).
func diffPaths(a, b any, at string, out *[]string) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok {
				*out = append(*out, at+"/"+escape(k))
				continue
			}
			diffPaths(x, y, at+"/"+escape(k), out)
		}
		for k := range bv {
			if _, ok := av[k]; !ok {
				*out = append(*out, at+"/"+escape(k))
			}
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			break
		}
		for i := range av {
			diffPaths(av[i], bv[i], at+"/"+strconv.Itoa(i), out)
		}
		return
	}
	if !equalValues(a, b) {
		*out = append(*out, at)
	}
}

// escape writes a map key as a JSON pointer token (RFC 6901).
func escape(k string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}
