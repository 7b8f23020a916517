package rules_test

import (
	"context"
	"path/filepath"
	"testing"

	"gitsync.dev/gitsync/health"
	"gitsync.dev/gitsync/health/rules"
)

// exampleStatuses are, per kind of examples/health-rules, statuses as its
// operator writes them and the health the example rule must give each.
var exampleStatuses = map[string][]struct {
	status string
	want   health.Status
}{
	"Certificate": {
		{`{conditions: [{type: Ready, status: "True", observedGeneration: 1}]}`, health.Current},
		{`{conditions: [{type: Ready, status: "True", observedGeneration: 1}, {type: Issuing, status: "True"}]}`, health.InProgress},
		{`{conditions: [{type: Ready, status: "False"}, {type: Issuing, status: "False", reason: Failed}]}`, health.Failed},
		{`{}`, health.InProgress},
	},
	"ClusterIssuer": {{`{conditions: [{type: Ready, status: "True"}]}`, health.Current}, {`{}`, health.InProgress}},
	"Issuer":        {{`{conditions: [{type: Ready, status: "True"}]}`, health.Current}, {`{conditions: [{type: Ready, status: "False"}]}`, health.InProgress}},
	"Rollout": {
		{`{phase: Healthy, observedGeneration: "1"}`, health.Current},
		{`{phase: Paused}`, health.InProgress},
		{`{phase: Degraded}`, health.Failed},
		{`{}`, health.InProgress},
	},
	"Cluster": {
		{`{phase: Cluster in healthy state, conditions: [{type: Ready, status: "True"}]}`, health.Current},
		{`{phase: Setting up primary, conditions: [{type: Ready, status: "False"}]}`, health.InProgress},
	},
	"Bucket": {
		{`{conditions: [{type: Ready, status: "True", reason: Available}, {type: Synced, status: "True"}]}`, health.Current},
		{`{conditions: [{type: Ready, status: "False", reason: Creating}, {type: Synced, status: "True"}]}`, health.InProgress},
		{`{conditions: [{type: Synced, status: "False", reason: ReconcileError}]}`, health.Failed},
	},
	"Provider": {
		{`{conditions: [{type: Installed, status: "True"}, {type: Healthy, status: "True"}]}`, health.Current},
		{`{conditions: [{type: Installed, status: "False"}]}`, health.InProgress},
		{`{conditions: [{type: Installed, status: "True"}, {type: Healthy, status: "False", reason: UnhealthyPackageRevision}]}`, health.Failed},
	},
	"Kafka": {
		{`{observedGeneration: 1, conditions: [{type: Ready, status: "True"}]}`, health.Current},
		{`{observedGeneration: 1, conditions: [{type: NotReady, status: "True", reason: Creating}]}`, health.InProgress},
		{`{observedGeneration: 1, conditions: [{type: NotReady, status: "True", reason: InvalidResourceException}]}`, health.Failed},
	},
	"KafkaTopic": {
		{`{conditions: [{type: Ready, status: "True"}]}`, health.Current},
		{`{conditions: [{type: NotReady, status: "True", reason: KafkaError}]}`, health.Failed},
	},
	"HelmRelease": {
		{`{conditions: [{type: Ready, status: "True", observedGeneration: 1}]}`, health.Current},
		{`{conditions: [{type: Ready, status: "Unknown"}, {type: Reconciling, status: "True"}]}`, health.InProgress},
		{`{conditions: [{type: Ready, status: "False", reason: UpgradeFailed}, {type: Stalled, status: "True"}]}`, health.Failed},
	},
}

// TestExamplesCompileAndJudge loads every rule file of examples/health-rules
// as `gitsync run --health-rules` does, and checks each rule on statuses
// its operator writes.
func TestExamplesCompileAndJudge(t *testing.T) {
	files, err := filepath.Glob("../../examples/health-rules/*.yaml")
	if err != nil || len(files) < 6 {
		t.Fatalf("%d example rule files (%v), want at least 6", len(files), err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			rs, err := rules.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			set, err := rules.Compile(rs)
			if err != nil || len(rs) == 0 {
				t.Fatalf("%d rules, compile error %v", len(rs), err)
			}
			for _, r := range rs {
				cases, ok := exampleStatuses[r.Kind]
				if !ok {
					t.Errorf("no statuses to check the %s rule on: add them to exampleStatuses", r.Kind)
				}
				for _, c := range cases {
					obj := parse(t, `{apiVersion: `+r.APIVersion+`, kind: `+r.Kind+`, metadata: {name: x, namespace: ns, generation: 1}, status: `+c.status+`}`)
					got, covered, err := set.Check(context.Background(), obj)
					if err != nil || !covered || got.Status != c.want {
						t.Errorf("%s with status %s: %s (%s), covered %v, error %v; want %s", r.Kind, c.status, got.Status, got.Message, covered, err, c.want)
					}
				}
			}
		})
	}
}

func TestLoadRejectsUnknownFields(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.yaml")
	writeFile(t, p, "- apiVersion: a.io/v1\n  kind: A\n  current: 'true'\n  ready: 'true'\n")
	if _, err := rules.Load(p); err == nil {
		t.Error("a rule with an unknown field (ready) loaded")
	}
	writeFile(t, p, "- apiVersion: a.io/v1\n  kind: A\n  current: '1'\n")
	if _, err := rules.Load(p); err == nil {
		t.Error("a rule that does not return a bool loaded")
	}
}
