package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"gitsync.dev/gitsync/drift"
)

// driftFlags are the CLI's counterpart of a GitSync's spec.drift.ignore.
type driftFlags struct {
	// IgnoreFields are [KIND[.GROUP][/NAME]=]POINTER rules.
	IgnoreFields []string
}

// AddFlags registers --ignore-field.
func (f *driftFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.IgnoreFields, "ignore-field", nil,
		"Field to leave alone, as spec.drift.ignore: [KIND[.GROUP][/NAME]=]POINTER, e.g. Deployment/web=/spec/replicas or "+
			"MutatingWebhookConfiguration.admissionregistration.k8s.io=/webhooks/*/clientConfig/caBundle (repeatable).")
}

// rules parses the flags into ignore rules named --ignore-field[i].
func (f *driftFlags) rules() (drift.Rules, error) {
	var out drift.Rules
	for i, s := range f.IgnoreFields {
		source := fmt.Sprintf("--ignore-field[%d]", i)
		var target drift.Target
		pointer := s
		if sel, p, ok := strings.Cut(s, "="); ok && !strings.HasPrefix(sel, "/") {
			pointer = p
			kind, name, _ := strings.Cut(sel, "/")
			target.Kind, target.Group, _ = strings.Cut(kind, ".")
			target.Name = name
			if target.Kind == "" {
				return nil, fmt.Errorf("%s %q: no kind before \"=\" (KIND[.GROUP][/NAME]=POINTER)", source, s)
			}
		}
		r, err := drift.NewRule(source, target, "", []string{pointer})
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
