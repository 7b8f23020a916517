package prepare

import (
	"fmt"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/drift"
)

// DriftRules are gs's spec.drift.ignore, parsed; a path that is not a JSON
// pointer or a label selector that does not parse is a *SpecError naming
// the rule.
func DriftRules(gs *v1.GitSync) (drift.Rules, error) {
	if gs.Spec.Drift == nil {
		return nil, nil
	}
	var rules drift.Rules
	for i, r := range gs.Spec.Drift.Ignore {
		source := fmt.Sprintf("spec.drift.ignore[%d]", i)
		var target drift.Target
		selector := ""
		if t := r.Target; t != nil {
			target = drift.Target{Group: t.Group, Version: t.Version, Kind: t.Kind, Name: t.Name, Namespace: t.Namespace}
			selector = t.LabelSelector
		}
		rule, err := drift.NewRule(source, target, selector, r.Paths)
		if err != nil {
			return nil, &SpecError{Field: source, Err: err}
		}
		rules = append(rules, rule)
	}
	return rules, nil
}

// DetectsDrift reports whether gs only reports drift (spec.drift.mode
// Detect) instead of reverting it.
func DetectsDrift(gs *v1.GitSync) bool {
	return gs.Spec.Drift != nil && gs.Spec.Drift.Mode == v1.DriftModeDetect
}
