package rules

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// Rule is one health rule as written: a spec.healthChecks entry or an item
// of a rule file.
type Rule = v1.HealthCheck

// GroupKind is the group and kind a rule covers: its apiVersion's group
// (every version) and its kind.
func GroupKind(r Rule) schema.GroupKind {
	group := r.APIVersion
	if g, _, found := strings.Cut(r.APIVersion, "/"); found {
		group = g
	} else if !strings.Contains(r.APIVersion, ".") && r.APIVersion != "" {
		// "v1", "v2beta1": a core version, not a group.
		if isVersion(r.APIVersion) {
			group = ""
		}
	}
	return schema.GroupKind{Group: group, Kind: r.Kind}
}

// isVersion reports whether s reads like a Kubernetes API version (v1,
// v1beta2), which apiVersion "v1" means rather than a group named v1.
func isVersion(s string) bool {
	if len(s) < 2 || s[0] != 'v' || s[1] < '0' || s[1] > '9' {
		return false
	}
	for _, c := range s[1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// name is how messages name a rule: "cert-manager.io/Certificate".
func name(r Rule) string {
	gk := GroupKind(r)
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Group + "/" + gk.Kind
}

// Merge returns the rules of base with those of over added; a rule of over
// replaces base's rule for the same group and kind (a GitSync's own rule
// wins over the agent's). The result is sorted by group and kind, so the
// same rules give the same Set key whatever their order.
func Merge(base, over []Rule) []Rule {
	byKind := make(map[schema.GroupKind]Rule, len(base)+len(over))
	for _, r := range base {
		byKind[GroupKind(r)] = r
	}
	for _, r := range over {
		byKind[GroupKind(r)] = r
	}
	out := make([]Rule, 0, len(byKind))
	for _, r := range byKind {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Rule) int {
		ga, gb := GroupKind(a), GroupKind(b)
		return cmp.Or(cmp.Compare(ga.Group, gb.Group), cmp.Compare(ga.Kind, gb.Kind))
	})
	return out
}
