package main

import (
	"github.com/spf13/pflag"

	"gitsync.dev/gitsync/health"
	"gitsync.dev/gitsync/health/rules"
)

// healthRuleFlags are --health-rules: CEL health rule files (a YAML list
// of rules, as spec.healthChecks holds them) judging the kinds they name
// in place of kstatus, as `gitsync run --health-rules` makes the agent do.
type healthRuleFlags struct {
	// Files are the rule files, in order: a later file's rule for a kind
	// replaces an earlier one's.
	Files []string

	loaded []rules.Rule
	// set is loaded compiled, for commands without rules of their own.
	set health.Rules
}

// AddFlags registers --health-rules on fs; what says what the rules judge.
func (f *healthRuleFlags) AddFlags(fs *pflag.FlagSet, what string) {
	fs.StringArrayVar(&f.Files, "health-rules", nil, "File of CEL health rules (a YAML list of {apiVersion, kind, current, inProgress, failed}, as spec.healthChecks) judging "+what+"; repeatable. See examples/health-rules.")
}

// Load reads and compiles the files once; an error names the file and
// the rule.
func (f *healthRuleFlags) Load() error {
	if len(f.Files) == 0 {
		return nil
	}
	rs, err := rules.Load(f.Files...)
	if err != nil {
		return err
	}
	f.loaded = rs
	f.set, err = f.Rules(nil)
	return err
}

// Rules compiles the loaded rules with own (a GitSync's spec.healthChecks)
// over them: own wins for the same group and kind, as in the agent.
func (f *healthRuleFlags) Rules(own []rules.Rule) (health.Rules, error) {
	if err := rules.Duplicate(own); err != nil {
		return nil, err
	}
	set, err := rules.Compile(rules.Merge(f.loaded, own))
	if err != nil || set.Len() == 0 {
		return nil, err
	}
	return set, nil
}
