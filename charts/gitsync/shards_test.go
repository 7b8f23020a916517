package chart_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestTemplateShards: by default every replica runs with --shards auto and
// leader election off, and gets its pod name (its Lease's name), so
// replicaCount N means N replicas sharing the GitSyncs; agent.shards "off"
// (or "") brings back one elected leader, and agent.leaderElect=false then
// turns election off for a single replica.
func TestTemplateShards(t *testing.T) {
	for _, tc := range []struct {
		name          string
		args          []string
		want, wantNot []string
	}{
		{"default", nil, []string{"--shards=auto", "--leader-elect=false"}, []string{"--leader-elect=true"}},
		{"three replicas", []string{"--set", "replicaCount=3"}, []string{"--shards=auto", "--leader-elect=false"}, []string{"--leader-elect=true"}},
		{"leaderElect ignored when sharing", []string{"--set", "agent.leaderElect=true"}, []string{"--shards=auto", "--leader-elect=false"}, []string{"--leader-elect=true"}},
		{"off", []string{"--set", "agent.shards=off", "--set", "replicaCount=2"}, []string{"--leader-elect=true"}, []string{"--shards=auto", "--leader-elect=false"}},
		{"empty", []string{"--set", "agent.shards="}, []string{"--leader-elect=true"}, []string{"--shards=auto", "--leader-elect=false"}},
		{"off without election", []string{"--set", "agent.shards=off", "--set", "agent.leaderElect=false"}, []string{"--leader-elect=false"}, []string{"--shards=auto", "--leader-elect=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := agentContainer(t, tc.args...)
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

// TestTemplateShardsRefusesUnknown: a misspelt agent.shards fails the
// render (values.schema.json) rather than silently choosing a mode.
func TestTemplateShardsRefusesUnknown(t *testing.T) {
	out, err := helm(t, "template", "gs", ".", "--namespace", "gitsync-system", "--set", "agent.shards=on")
	if err == nil {
		t.Fatalf("agent.shards=on rendered:\n%.300s", out)
	}
	if !strings.Contains(out, "shards") {
		t.Errorf("the error does not name agent.shards:\n%s", out)
	}
}

func agentContainer(t *testing.T, args ...string) corev1.Container {
	t.Helper()
	var d *appsv1.Deployment
	for _, o := range template(t, "gs", "gitsync-system", args...) {
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
	return d.Spec.Template.Spec.Containers[0]
}
