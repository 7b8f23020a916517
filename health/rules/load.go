package rules

import (
	"bytes"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// maxFileBytes bounds a rule file: a few hundred rules.
const maxFileBytes = 1 << 20

// Load reads rule files (`gitsync run --health-rules`, the CLI's
// --health-rules): each is a YAML (or JSON) list of rules with the fields
// of spec.healthChecks; unknown fields are an error. Rules of a later file
// replace those of an earlier one for the same group and kind; within one
// file a kind twice is an error (at Compile).
func Load(paths ...string) ([]Rule, error) {
	var all []Rule
	for _, p := range paths {
		rs, err := loadFile(p)
		if err != nil {
			return nil, err
		}
		if _, err := Compile(rs); err != nil {
			return nil, fmt.Errorf("health rules %s: %w", p, err)
		}
		all = Merge(all, rs)
	}
	return all, nil
}

func loadFile(path string) ([]Rule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("health rules: %w", err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("health rules %s: %d bytes, more than the %d a rule file may have", path, len(data), maxFileBytes)
	}
	var rs []Rule
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	if err := yaml.UnmarshalStrict(data, &rs); err != nil {
		return nil, fmt.Errorf("health rules %s: want a list of rules (apiVersion, kind, current, inProgress, failed): %w", path, err)
	}
	return rs, nil
}
