package drift

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// Rule leaves the fields at Paths alone on every object Target selects.
type Rule struct {
	// Source names the rule where a user wrote it, for the explanations of
	// what it skipped: "spec.drift.ignore[0]", "--ignore-field[1]".
	Source string
	// Target selects the objects; the zero Target selects every object.
	Target Target
	// Paths are the fields left alone.
	Paths []Pointer
}

// Target selects objects; an empty field matches anything.
type Target struct {
	Group, Version, Kind, Name, Namespace string
	// Labels is matched against the labels the object has in Git; nil
	// matches anything.
	Labels labels.Selector
}

// NewRule parses a rule from its user-facing form: paths are JSON pointers,
// selector a label selector in kubectl's syntax ("" selects everything).
func NewRule(source string, target Target, selector string, paths []string) (Rule, error) {
	if len(paths) == 0 {
		return Rule{}, fmt.Errorf("%s: no paths", source)
	}
	r := Rule{Source: source, Target: target}
	if selector != "" {
		sel, err := labels.Parse(selector)
		if err != nil {
			return Rule{}, fmt.Errorf("%s: label selector %q: %w", source, selector, err)
		}
		r.Target.Labels = sel
	}
	for _, s := range paths {
		p, err := ParsePointer(s)
		if err != nil {
			return Rule{}, fmt.Errorf("%s: %w", source, err)
		}
		r.Paths = append(r.Paths, p)
	}
	return r, nil
}

// Matches reports whether t selects obj. Namespace is compared with the
// namespace obj is applied in, so a manifest without one matches the
// namespace it lands in.
func (t Target) Matches(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	switch {
	case t.Group != "" && t.Group != gvk.Group,
		t.Version != "" && t.Version != gvk.Version,
		t.Kind != "" && t.Kind != gvk.Kind,
		t.Name != "" && t.Name != obj.GetName(),
		t.Namespace != "" && t.Namespace != obj.GetNamespace():
		return false
	}
	return t.Labels == nil || t.Labels.Matches(labels.Set(obj.GetLabels()))
}

// Rules are the ignore rules of one sync, in the order written.
type Rules []Rule

// matching returns the rules that select obj.
func (rs Rules) matching(obj *unstructured.Unstructured) []Rule {
	var out []Rule
	for _, r := range rs {
		if r.Target.Matches(obj) {
			out = append(out, r)
		}
	}
	return out
}
