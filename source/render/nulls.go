package render

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Nulls are read as the apiserver reads them when it decodes a built-in
// kind into its Go type (sigs.k8s.io/json, encoding/json's rules):
//
//   - null as the value of a struct field leaves the field untouched, so it
//     is the field's absence: the key is dropped (`annotations:`,
//     `resources:`, `env:` with nothing under them, as charts render them);
//   - null as an entry of a map or an item of a list is the element type's
//     zero value: "" for strings (a ConfigMap key or a label with an empty
//     value), otherwise left for the apiserver.
//
// Sent as written, a null struct field makes server-side apply record the
// field as ours (a leaf): the first write of another manager below it (the
// controller-manager's revision annotation below a null `annotations:`)
// takes it away, and every later apply takes it back, a write that changes
// nothing. Dropped, the object stored is the same and nothing is owned.
//
// A custom resource has no Go type: the apiserver reads it by the CRD's
// schema (nullable fields keep null, x-kubernetes-preserve-unknown-fields
// keeps it too: Helm values in a HelmRelease delete a key with null), which
// the render does not know; only its metadata, an ObjectMeta like every
// kind's, is read this way. Runs on rendered objects, after kustomize: nulls
// in patches keep their strategic-merge meaning.
func normalizeNulls(gvk schema.GroupVersionKind, obj map[string]any) {
	if t, ok := builtinType(gvk); ok {
		normalizeValue(t, obj)
		return
	}
	if meta, ok := obj["metadata"].(map[string]any); ok {
		normalizeValue(objectMetaType, meta)
	}
}

// normalizeValue rewrites the nulls below v, a value decoded for Go type t.
func normalizeValue(t reflect.Type, v any) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		fields := structFields(t)
		if !ok || fields == nil {
			return
		}
		for k, fv := range m {
			ft, known := fields[k]
			switch {
			case !known: // the apiserver's to refuse or drop
			case fv == nil:
				delete(m, k)
			default:
				normalizeValue(ft, fv)
			}
		}
	case reflect.Map:
		if m, ok := v.(map[string]any); ok {
			for k, ev := range m {
				m[k] = normalizeElement(t.Elem(), ev)
			}
		}
	case reflect.Slice:
		if l, ok := v.([]any); ok && t.Elem().Kind() != reflect.Uint8 { // []byte is a base64 string
			for i, ev := range l {
				l[i] = normalizeElement(t.Elem(), ev)
			}
		}
	}
}

// normalizeElement returns a map entry or list item decoded for type t.
func normalizeElement(t reflect.Type, v any) any {
	if v == nil {
		if t.Kind() == reflect.String {
			return ""
		}
		return nil
	}
	normalizeValue(t, v)
	return v
}

var (
	objectMetaType  = reflect.TypeFor[metav1.ObjectMeta]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	fieldsByType    sync.Map // reflect.Type → map[string]reflect.Type (nil: opaque)
)

// structFields maps the JSON names of t's fields (inline and embedded
// structs flattened) to their types. It is nil for a type that decodes
// itself (Quantity, Time, IntOrString, RawExtension): opaque here.
func structFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldsByType.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	var fields map[string]reflect.Type
	if !reflect.PointerTo(t).Implements(unmarshalerType) {
		fields = map[string]reflect.Type{}
		addFields(t, fields)
	}
	fieldsByType.Store(t, fields)
	return fields
}

func addFields(t reflect.Type, into map[string]reflect.Type) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case name == "-" || !f.IsExported() && !f.Anonymous:
		case f.Anonymous && name == "" || strings.Contains(opts, "inline"):
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(ft, into)
			}
		case name == "":
			into[f.Name] = f.Type
		default:
			into[name] = f.Type
		}
	}
}

// builtinScheme knows the Go types of the kinds Kubernetes serves itself
// (client-go's) and of CustomResourceDefinitions; built on first use.
var builtinScheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(s), apiextensionsv1.AddToScheme(s)); err != nil {
		panic(err) // fixed at build time
	}
	return s
})

// builtinType returns the struct type of gvk, if it is a built-in kind.
func builtinType(gvk schema.GroupVersionKind) (reflect.Type, bool) {
	obj, err := builtinScheme().New(gvk)
	if err != nil {
		return nil, false
	}
	if _, unstructured := obj.(runtime.Unstructured); unstructured {
		return nil, false
	}
	return reflect.TypeOf(obj).Elem(), true
}
