package diff

import (
	"encoding/base64"
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Masks stand in for Secret values in every output.
const (
	// MaskValue replaces a Secret value.
	MaskValue = "***"
	// MaskBefore and MaskAfter replace a Secret value that an apply would
	// change, so a diff shows which keys change without showing values.
	MaskBefore = "*** (before)"
	MaskAfter  = "*** (after)"
)

// lastApplied is the annotation kubectl's client-side apply stores the whole
// applied object in, Secret values included.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// secretFields hold Secret values; both are masked.
var secretFields = []string{"data", "stringData"}

// Mask returns a deep copy of obj in which every Secret value is "***": the
// values of data and stringData, and the same inside the kubectl
// last-applied-configuration annotation (replaced as a whole when it does not
// parse). managedFields record only key names of data and stringData, never
// values, so they are kept. Objects other than core Secrets are copied
// unchanged; nil yields nil.
func Mask(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	out := obj.DeepCopy()
	if !isSecret(out) {
		return out
	}
	maskValues(out.Object, nil, MaskValue)
	maskLastApplied(out)
	return out
}

func isSecret(obj *unstructured.Unstructured) bool {
	return obj != nil && obj.GetKind() == "Secret" && obj.GroupVersionKind().Group == ""
}

// maskValues replaces each value under data and stringData of obj with mask,
// or with changedMask for the keys in changed.
func maskValues(obj map[string]any, changed map[string]bool, changedMask string) {
	for _, f := range secretFields {
		m, ok := obj[f].(map[string]any)
		if !ok {
			if _, present := obj[f]; present && obj[f] != nil {
				obj[f] = MaskValue // not a map: mask the whole field
			}
			continue
		}
		for k := range m {
			if changed[k] {
				m[k] = changedMask
			} else {
				m[k] = MaskValue
			}
		}
	}
}

func maskLastApplied(obj *unstructured.Unstructured) {
	ann := obj.GetAnnotations()
	raw, ok := ann[lastApplied]
	if !ok {
		return
	}
	ann[lastApplied] = MaskValue
	var applied map[string]any
	if err := json.Unmarshal([]byte(raw), &applied); err == nil {
		maskValues(applied, nil, MaskValue)
		if b, err := json.Marshal(applied); err == nil {
			ann[lastApplied] = string(b)
		}
	}
	obj.SetAnnotations(ann)
}

// maskPair masks two versions of one object for a diff: a key whose value
// differs between them (comparing stringData with base64-decoded data, as
// the server merges them) is shown as MaskBefore and MaskAfter, every other
// value as MaskValue.
func maskPair(before, after *unstructured.Unstructured) (*unstructured.Unstructured, *unstructured.Unstructured) {
	if !isSecret(before) && !isSecret(after) {
		return before, after
	}
	bv, av := secretValues(before), secretValues(after)
	changed := map[string]bool{}
	for k, v := range bv {
		if w, ok := av[k]; ok && w != v {
			changed[k] = true
		}
	}
	b, a := Mask(before), Mask(after)
	if b != nil {
		maskValues(b.Object, changed, MaskBefore)
	}
	if a != nil {
		maskValues(a.Object, changed, MaskAfter)
	}
	return b, a
}

// secretValues returns the effective values of a Secret: data decoded,
// overridden by stringData.
func secretValues(obj *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	if obj == nil {
		return out
	}
	data, _ := obj.Object["data"].(map[string]any)
	for k, v := range data {
		s, _ := v.(string)
		if dec, err := base64.StdEncoding.DecodeString(s); err == nil {
			s = string(dec)
		}
		out[k] = s
	}
	str, _ := obj.Object["stringData"].(map[string]any)
	for k, v := range str {
		s, _ := v.(string)
		out[k] = s
	}
	return out
}
