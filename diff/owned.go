package diff

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// ownedInSync reports whether applying desired as manager would certainly
// change nothing in live, judged from the fields manager owns in live's
// managedFields (FieldsV1) alone. It answers true only when
//   - every field of desired is owned by manager and equals the live value,
//   - manager owns no field that desired lacks (a field removed from Git is
//     drift), and
//   - lists keep desired's order and item set.
//
// Anything it cannot be sure about (normalised quantities, int-or-string,
// defaulted keys it does not know, an empty map the server filled with
// defaults, versions that differ) yields false, and the caller asks the
// server.
func ownedInSync(desired, live *unstructured.Unstructured, manager string) bool {
	d, l := desired.Object, live.Object
	apiVersion, _ := d["apiVersion"].(string)
	if apiVersion == "" || apiVersion != l["apiVersion"] || d["kind"] != l["kind"] {
		return false
	}
	if desired.GetName() == "" || desired.GetName() != live.GetName() || desired.GetNamespace() != live.GetNamespace() {
		return false
	}
	fields, ok := ownedFieldsV1(l, manager, apiVersion)
	if !ok {
		return false
	}
	gk := desired.GroupVersionKind().GroupKind()
	w := walker{keyDefaults: keyDefaultsFor(gk)}
	for name, dv := range d {
		switch name {
		case "apiVersion", "kind":
			continue
		case "metadata":
			dm, ok := dv.(map[string]any)
			if !ok || !w.metadata(dm, l["metadata"], fields) {
				return false
			}
		default:
			if cmp, ok := kindFields[gk][name]; ok {
				if !cmp(dv, l, fields) {
					return false
				}
				continue
			}
			lv, present := l[name]
			if !w.field(name, dv, lv, present, fields) {
				return false
			}
		}
	}
	return ownedSubsetOf(fields, d)
}

// ownedFieldsV1 returns the decoded FieldsV1 of manager's Apply entry in the
// object's managedFields, if it was recorded for apiVersion.
func ownedFieldsV1(obj map[string]any, manager, apiVersion string) (map[string]any, bool) {
	meta, _ := obj["metadata"].(map[string]any)
	entries, _ := meta["managedFields"].([]any)
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		if entry["manager"] != manager || entry["operation"] != "Apply" {
			continue
		}
		if sub, _ := entry["subresource"].(string); sub != "" {
			continue
		}
		if entry["apiVersion"] != apiVersion || entry["fieldsType"] != "FieldsV1" {
			return nil, false
		}
		fields, ok := entry["fieldsV1"].(map[string]any)
		return fields, ok
	}
	return nil, false
}

// walker compares desired values with live ones under a FieldsV1 node.
type walker struct {
	// keyDefaults are values the server defaults for list-map key fields
	// that desired may leave out (e.g. a port's protocol).
	keyDefaults map[string]any
}

// metadata compares the object's metadata. The server never records name,
// namespace and creationTimestamp in managedFields: desired's name and
// namespace are compared by value, and a null creationTimestamp (as in
// kubectl-generated YAML) is ignored.
func (w walker) metadata(dm map[string]any, live any, fields map[string]any) bool {
	lm, _ := live.(map[string]any)
	node, _ := fields["f:metadata"].(map[string]any)
	for name, dv := range dm {
		lv, present := lm[name]
		switch name {
		case "name", "namespace":
			if !present || !equalValues(dv, lv) {
				return false
			}
		case "creationTimestamp":
			if dv != nil {
				return false
			}
		default:
			if !w.field(name, dv, lv, present, node) {
				return false
			}
		}
	}
	if _, owned := fields["f:metadata"]; owned && node == nil {
		return false
	}
	return ownedSubsetOf(node, dm)
}

// field compares one desired map entry with the live one under node, the
// FieldsV1 node of the map that holds it.
func (w walker) field(name string, dv, lv any, present bool, node map[string]any) bool {
	child, owned := node["f:"+name].(map[string]any)
	if !owned {
		return false
	}
	granular := hasChildren(child)
	switch dv := dv.(type) {
	case nil:
		// Applying null owns the field and keeps it unset.
		return !granular && (!present || lv == nil)
	case map[string]any:
		if !granular {
			return sameOrEmpty(dv, len(dv), lv, present)
		}
		lm, ok := lv.(map[string]any)
		return ok && w.mapFields(dv, lm, child, nil)
	case []any:
		if !granular {
			return sameOrEmpty(dv, len(dv), lv, present)
		}
		ll, ok := lv.([]any)
		return ok && w.list(dv, ll, child)
	default:
		return !granular && present && equalValues(dv, lv)
	}
}

// sameOrEmpty compares an atomic value; an empty desired map or list also
// matches an absent live field, because the server omits empty values of
// built-in types while still recording the owner.
func sameOrEmpty(dv any, n int, lv any, present bool) bool {
	if !present || lv == nil {
		return n == 0
	}
	return equalValues(dv, lv)
}

// mapFields compares a granular map; lenient names are key fields the
// server defaults, which desired left out, so they are compared by value only.
func (w walker) mapFields(dm, lm map[string]any, node map[string]any, lenient map[string]bool) bool {
	for name, dv := range dm {
		lv, present := lm[name]
		if lenient[name] {
			// A defaulted key field desired leaves out must not be owned:
			// if it is, the apply would release it.
			if _, owned := node["f:"+name]; owned || !present || !equalValues(dv, lv) {
				return false
			}
			continue
		}
		if !w.field(name, dv, lv, present, node) {
			return false
		}
	}
	return ownedSubsetOf(node, dm)
}

// ownedSubsetOf reports whether every field owned under node is present in
// desired: a field gitsync owns that desired lacks would be removed by the
// apply.
func ownedSubsetOf(node, desired map[string]any) bool {
	for key := range node {
		if key == "." {
			continue
		}
		name, ok := strings.CutPrefix(key, "f:")
		if !ok {
			return false
		}
		if _, in := desired[name]; !in {
			return false
		}
	}
	return true
}

// hasChildren reports whether a FieldsV1 node owns fields below itself, i.e.
// the value is merged granularly rather than owned as a whole.
func hasChildren(node map[string]any) bool {
	for key := range node {
		if key != "." {
			return true
		}
	}
	return false
}

// builtinGroup reports whether a group is served by Kubernetes itself, whose
// list-map key defaults keyDefaultsFor knows.
func builtinGroup(group string) bool {
	return !strings.Contains(group, ".") || strings.HasSuffix(group, ".k8s.io")
}

// keyDefaultsFor returns the key-field defaults of list maps for a kind: for
// built-in kinds, "protocol" (containers' and Services' ports, endpoint
// ports) defaults to TCP. Custom resources get none: a missing key field makes
// the fast path defer to the server.
func keyDefaultsFor(gk schema.GroupKind) map[string]any {
	if builtinGroup(gk.Group) {
		return builtinKeyDefaults
	}
	return nil
}

var builtinKeyDefaults = map[string]any{"protocol": "TCP"}

// parseElement parses a FieldsV1 key such as `k:{"name":"web"}` or `v:"x"`.
func parseElement(key string) (fieldpath.PathElement, bool) {
	pe, err := fieldpath.DeserializePathElement(key)
	return pe, err == nil
}
