package health_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"gitsync.dev/gitsync/health"
	"gitsync.dev/gitsync/object"
)

func parse(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		want     health.Status
	}{
		{name: "configmap exists", want: health.Current,
			manifest: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: n}}`},
		{name: "deployment available", want: health.Current, manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: n, generation: 2}
spec: {replicas: 1}
status:
  observedGeneration: 2
  replicas: 1
  updatedReplicas: 1
  readyReplicas: 1
  availableReplicas: 1
  conditions: [{type: Available, status: "True"}, {type: Progressing, status: "True", reason: NewReplicaSetAvailable}]
`},
		{name: "deployment not yet observed", want: health.InProgress, manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: n, generation: 3}
spec: {replicas: 1}
status: {observedGeneration: 2}
`},
		{name: "deployment past its progress deadline", want: health.Failed, manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: n, generation: 1}
spec: {replicas: 1}
status:
  observedGeneration: 1
  replicas: 1
  updatedReplicas: 1
  conditions: [{type: Progressing, status: "False", reason: ProgressDeadlineExceeded}]
`},
		{name: "custom resource stalled", want: health.Failed, manifest: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: n, generation: 1}
status: {observedGeneration: 1, conditions: [{type: Stalled, status: "True", reason: Broken}]}
`},
		{name: "being deleted", want: health.Terminating, manifest: `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: n, deletionTimestamp: "2024-01-01T00:00:00Z"}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := health.Check(parse(t, tt.manifest))
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tt.want {
				t.Errorf("Check() = %s (%s), want %s", got.Status, got.Message, tt.want)
			}
		})
	}
}

func TestAggregate(t *testing.T) {
	r := func(s ...health.Status) []health.Result {
		var out []health.Result
		for _, x := range s {
			out = append(out, health.Result{ID: object.ID{Kind: "ConfigMap", Name: "x"}, Status: x})
		}
		return out
	}
	tests := []struct {
		name string
		in   []health.Result
		want health.Status
	}{
		{name: "empty", want: health.Current},
		{name: "all current", in: r(health.Current, health.Current), want: health.Current},
		{name: "one in progress", in: r(health.Current, health.InProgress), want: health.InProgress},
		{name: "one missing", in: r(health.Current, health.NotFound), want: health.InProgress},
		{name: "failed wins", in: r(health.InProgress, health.Failed, health.Current), want: health.Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, health.Aggregate(tt.in)); d != "" {
				t.Errorf("Aggregate (-want +got):\n%s", d)
			}
		})
	}
}
