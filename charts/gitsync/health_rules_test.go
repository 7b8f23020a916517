package chart_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/health/rules"
)

// TestHealthRulesValue: agent.healthRules become a ConfigMap mounted into
// the agent and named by --health-rules, holding rules the agent loads as
// written; without the value there is neither.
func TestHealthRulesValue(t *testing.T) {
	const ns = "gitsync-system"
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(`agent:
  healthRules:
  - apiVersion: cert-manager.io/v1
    kind: Certificate
    failed: "self.status.?conditions.orValue([]).exists(c, c.type == 'Issuing' && c.status == 'False')"
    current: "self.status.?conditions.orValue([]).exists(c, c.type == 'Ready' && c.status == 'True')"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	objs := template(t, "gs", ns, "-f", values)
	cm := find(t, objs, "ConfigMap", ns, "gs-gitsync-health-rules")
	data, _, _ := unstructured.NestedString(cm.Object, "data", "rules.yaml")
	file := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	rs, err := rules.Load(file)
	if err != nil || len(rs) != 1 || rs[0].Kind != "Certificate" {
		t.Fatalf("the ConfigMap's rules.yaml loads as %+v, %v:\n%s", rs, err, data)
	}
	args := agentArgs(t, find(t, objs, "Deployment", ns, "gs-gitsync"))
	if !slices.Contains(args, "--health-rules=/etc/gitsync/health-rules/rules.yaml") {
		t.Errorf("agent args %v lack --health-rules", args)
	}

	for _, o := range template(t, "gs", ns) {
		if o.GetName() == "gs-gitsync-health-rules" {
			t.Error("a health rules ConfigMap without agent.healthRules")
		}
		if o.GetKind() == "Deployment" && slices.ContainsFunc(agentArgs(t, o), func(a string) bool { return len(a) > 14 && a[:14] == "--health-rules" }) {
			t.Error("--health-rules without agent.healthRules")
		}
	}
	if out, err := helm(t, "template", "gs", ".", "--set", "agent.healthRules[0].kind=Certificate"); err == nil {
		t.Errorf("a rule without apiVersion and current rendered:\n%s", out)
	}
}

func agentArgs(t *testing.T, d *unstructured.Unstructured) []string {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		m := c.(map[string]any)
		if m["name"] != "gitsync" {
			continue
		}
		var out []string
		for _, a := range m["args"].([]any) {
			out = append(out, a.(string))
		}
		return out
	}
	t.Fatal("no gitsync container")
	return nil
}
