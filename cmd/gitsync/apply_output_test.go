package main

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// TestApplyOutput: apply -o json|yaml prints one parseable list (and no
// human lines), with prunes, as diff -o does.
func TestApplyOutput(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.yaml": configMap("a", "k", "v"), "b.yaml": configMap("b", "k", "v")})
	r := gitsyncIn(t, ns, "apply", dir, "--name", "web", "-o", "json")
	wantCode(t, r, 0)
	var got []applyItem
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("apply -o json is not a JSON list: %v\n%s", err, r)
	}
	want := []applyItem{{Subject: "ConfigMap/" + ns + "/a", Action: "created"}, {Subject: "ConfigMap/" + ns + "/b", Action: "created"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("apply -o json (-want +got):\n%s", d)
	}

	writeFiles(t, dir, map[string]string{"b.yaml": ""})
	r = gitsyncIn(t, ns, "apply", dir, "--name", "web", "--prune", "-o", "yaml")
	wantCode(t, r, 0)
	got = nil
	if err := yaml.UnmarshalStrict([]byte(r.stdout), &got); err != nil {
		t.Fatalf("apply -o yaml is not a YAML list: %v\n%s", err, r)
	}
	want = []applyItem{{Subject: "ConfigMap/" + ns + "/a", Action: "unchanged"}, {Subject: "ConfigMap/" + ns + "/b", Action: "pruned"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("apply --prune -o yaml (-want +got):\n%s", d)
	}
}
