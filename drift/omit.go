package drift

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// How says what Omit did with one ignored field.
type How string

const (
	// Created: the object does not exist yet, Git's value is sent.
	Created How = "set from Git on create"
	// KeptLive: the field manager owns the field, the live value is sent.
	KeptLive How = "live value kept"
	// Released: another manager owns the field (or nobody set it), it is
	// left out of the apply.
	Released How = "left to its owner"
)

// Skip is one field of Git that an ignore rule left alone.
type Skip struct {
	// Path is the field as a JSON pointer with concrete list indices.
	Path string
	// Rule is the Source of the rule that matched.
	Rule string
	// How says what was sent for it.
	How How
	// Differs is true when Git's value differs from the live one: the
	// difference a diff would have shown without the rule.
	Differs bool
}

// String explains the skip in a diff, e.g. `/spec/replicas: left alone by
// spec.drift.ignore[0] (left to its owner; Git differs)`.
func (s Skip) String() string {
	note := string(s.How)
	if s.Differs {
		note += "; Git's value differs"
	}
	return s.Path + ": left alone by " + s.Rule + " (" + note + ")"
}

// Omit returns desired as it is to be applied under rs, and what each rule
// left alone; desired itself is returned when no rule names a field it
// has. live is nil when the object does not exist; owned is the set of
// fields the field manager applied to live (nil when none).
func (rs Rules) Omit(desired, live *unstructured.Unstructured, owned *fieldpath.Set) (*unstructured.Unstructured, []Skip) {
	if len(rs) == 0 {
		return desired, nil
	}
	var out *unstructured.Unstructured
	var skips []Skip
	for _, r := range rs.matching(desired) {
		for _, p := range r.Paths {
			paths := p.concrete(desired.Object)
			// Removing list elements shifts the later ones: last first.
			slices.Reverse(paths)
			for _, path := range paths {
				if out == nil {
					out = desired.DeepCopy()
				}
				skips = append(skips, omitOne(out, live, owned, path, r.Source))
			}
		}
	}
	if out == nil {
		return desired, nil
	}
	slices.Reverse(skips)
	return out, skips
}

// omitOne applies one ignored field of obj (a copy of desired) at path.
func omitOne(obj, live *unstructured.Unstructured, owned *fieldpath.Set, path []string, rule string) Skip {
	s := Skip{Path: pointerOf(path), Rule: rule}
	if live == nil {
		s.How = Created
		return s
	}
	want, _ := lookup(obj.Object, path)
	got, inLive := lookup(live.Object, path)
	s.Differs = !inLive || !value.Equals(value.NewValueInterface(want), value.NewValueInterface(got))
	if inLive && ownsAt(owned, live.Object, path) {
		set(obj.Object, path, got)
		s.How = KeptLive
		return s
	}
	remove(obj.Object, path)
	s.How = Released
	return s
}

// pointerOf writes path as a JSON pointer.
func pointerOf(path []string) string {
	var b strings.Builder
	for _, t := range path {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}

// lookup returns the value at path (map keys and list indices).
func lookup(v any, path []string) (any, bool) {
	for _, t := range path {
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[t]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, ok := index(t, len(c))
			if !ok {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// parentOf returns the container holding the last token of path.
func parentOf(obj map[string]any, path []string) any {
	parent, _ := lookup(obj, path[:len(path)-1])
	return parent
}

// set replaces the value at path, which exists in obj.
func set(obj map[string]any, path []string, v any) {
	last := path[len(path)-1]
	switch c := parentOf(obj, path).(type) {
	case map[string]any:
		c[last] = v
	case []any:
		if i, ok := index(last, len(c)); ok {
			c[i] = v
		}
	}
}

// remove deletes the value at path from obj. A list element is cut out of
// its list, which is replaced in its parent.
func remove(obj map[string]any, path []string) {
	last := path[len(path)-1]
	switch c := parentOf(obj, path).(type) {
	case map[string]any:
		delete(c, last)
	case []any:
		i, ok := index(last, len(c))
		if !ok {
			return
		}
		set(obj, path[:len(path)-1], slices.Delete(slices.Clone(c), i, i+1))
	}
}

// ownsAt reports whether owned holds the field at path of live, or a field
// inside it. List elements are matched the way server-side apply names
// them: by key fields, by value, or by index.
func ownsAt(owned *fieldpath.Set, live map[string]any, path []string) bool {
	if owned == nil {
		return false
	}
	found := false
	owned.Iterate(func(p fieldpath.Path) {
		if !found && prefixOf(path, p, live) {
			found = true
		}
	})
	return found
}

// prefixOf reports whether the concrete path of live is a prefix of the
// owned field path p.
func prefixOf(path []string, p fieldpath.Path, live any) bool {
	if len(p) < len(path) {
		return false
	}
	v := live
	for i, t := range path {
		pe := p[i]
		switch c := v.(type) {
		case map[string]any:
			if pe.FieldName == nil || *pe.FieldName != t {
				return false
			}
			v = c[t]
		case []any:
			j, ok := index(t, len(c))
			if !ok || !elementIs(pe, c[j], j) {
				return false
			}
			v = c[j]
		default:
			return false
		}
	}
	return true
}

// elementIs reports whether pe names elem, the list element at index i.
func elementIs(pe fieldpath.PathElement, elem any, i int) bool {
	switch {
	case pe.Index != nil:
		return *pe.Index == i
	case pe.Value != nil:
		return value.Equals(*pe.Value, value.NewValueInterface(elem))
	case pe.Key != nil:
		m, ok := elem.(map[string]any)
		if !ok {
			return false
		}
		for _, f := range *pe.Key {
			got, ok := m[f.Name]
			if !ok || !value.Equals(f.Value, value.NewValueInterface(got)) {
				return false
			}
		}
		return true
	}
	return false
}
