package render

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"gitsync.dev/gitsync/object"
)

// validateObjects checks that every decoded object is a Kubernetes object
// with apiVersion, kind and metadata.name, and that no two share a group,
// kind, namespace and name. It returns them as Unstructured, in input order.
func validateObjects(docs []decodedObject) ([]*unstructured.Unstructured, error) {
	objs := make([]*unstructured.Unstructured, 0, len(docs))
	seen := make(map[object.ID]decodedObject, len(docs))
	for _, d := range docs {
		obj, err := validateObject(d)
		if err != nil {
			return nil, err
		}
		id := object.IDOf(obj)
		if first, dup := seen[id]; dup {
			e := objectErr(errDuplicate, d, "duplicate object %s, first defined in %s", id, itemLocation(first))
			return nil, e
		}
		seen[id] = d
		objs = append(objs, obj)
	}
	return objs, nil
}

// validateObject checks the shape of one object without looking at its content
// beyond the identifying fields, so its errors never quote a value.
func validateObject(d decodedObject) (*unstructured.Unstructured, error) {
	m, ok := d.Object.(map[string]any)
	if !ok {
		return nil, objectErr(errInvalidObject, d, "not an object")
	}
	for _, field := range []string{"apiVersion", "kind"} {
		v, present := m[field]
		s, isString := v.(string)
		switch {
		case !present || v == nil || (isString && s == ""):
			return nil, objectErr(errInvalidObject, d, "missing %s", field)
		case !isString:
			return nil, objectErr(errInvalidObject, d, "%s is not a string", field)
		}
	}
	if m["kind"] == "List" {
		// A List inside a List, or one without items: not something to apply.
		return nil, objectErr(errInvalidObject, d, "a List is not an object, only its items are")
	}
	if _, err := schema.ParseGroupVersion(m["apiVersion"].(string)); err != nil {
		return nil, objectErr(errInvalidObject, d, "apiVersion is not group/version")
	}
	meta, ok := m["metadata"].(map[string]any)
	if !ok {
		if m["metadata"] != nil {
			return nil, objectErr(errInvalidObject, d, "metadata is not an object")
		}
		return nil, objectErr(errInvalidObject, d, "missing metadata.name")
	}
	if name, _ := meta["name"].(string); name == "" {
		if _, gen := meta["generateName"]; gen {
			return nil, objectErr(errInvalidObject, d, "metadata.generateName is not supported, names must come from Git")
		}
		return nil, objectErr(errInvalidObject, d, "missing metadata.name")
	}
	if ns, present := meta["namespace"]; present && ns != nil {
		if _, isString := ns.(string); !isString {
			return nil, objectErr(errInvalidObject, d, "metadata.namespace is not a string")
		}
	}
	u := &unstructured.Unstructured{Object: m}
	normalizeNulls(u.GroupVersionKind(), m) // nulls.go
	return u, nil
}

// objectErr is an Error about one decoded object, naming the List item
// when there is one.
func objectErr(class error, d decodedObject, format string, args ...any) *Error {
	e := docErr(class, d.Loc, format, args...)
	if d.Item > 0 {
		e.Detail = fmt.Sprintf("items[%d]: %s", d.Item-1, e.Detail)
	}
	return e
}

// itemLocation is a decoded object's location for messages, e.g.
// "a.yaml:3: document 2 items[0]".
func itemLocation(d decodedObject) string {
	s := d.Loc.String()
	if d.Item > 0 {
		s += " items[" + strconv.Itoa(d.Item-1) + "]"
	}
	return s
}
