package chart_test

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestTemplateShards: agent.shards=auto runs every replica with --shards
// auto and leader election off, and gives each its pod name (its Lease's
// name); by default the chart keeps one leader.
func TestTemplateShards(t *testing.T) {
	for _, tc := range []struct {
		name          string
		args          []string
		want, wantNot []string
	}{
		{"default", nil, []string{"--leader-elect=true"}, []string{"--shards=auto"}},
		{"shards auto", []string{"--set", "agent.shards=auto", "--set", "replicaCount=3"}, []string{"--leader-elect=false", "--shards=auto"}, []string{"--leader-elect=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d *appsv1.Deployment
			for _, o := range template(t, "gs", "gitsync-system", tc.args...) {
				if o.GetKind() != "Deployment" {
					continue
				}
				d = &appsv1.Deployment{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
					t.Fatal(err)
				}
			}
			if d == nil {
				t.Fatal("no Deployment rendered")
			}
			c := d.Spec.Template.Spec.Containers[0]
			for _, a := range tc.want {
				if !slices.Contains(c.Args, a) {
					t.Errorf("args %v lack %s", c.Args, a)
				}
			}
			for _, a := range tc.wantNot {
				if slices.Contains(c.Args, a) {
					t.Errorf("args %v have %s", c.Args, a)
				}
			}
			podName := false
			for _, e := range c.Env {
				podName = podName || (e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name")
			}
			if !podName {
				t.Errorf("env %v lacks POD_NAME from metadata.name", c.Env)
			}
		})
	}
}
