package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/sandbox"
)

// TestBombsStallNothingApplied: a new commit that turns each of three paths
// into one of issue 24's bombs (a 1 MB variable used 700 times, a template
// allocating 400 MiB, a template loop that never ends) stalls each GitSync
// with the budget that stopped it (SubstitutionFailed for the variable,
// RenderFailed naming the memory budget and the deadline for the charts);
// nothing of the commit is applied and nothing pruned: the first commit's
// objects stay, and so does its revision.
//
// Checked by removing the substitution's Charge: the agent then builds the
// 700 MB value and the apiserver refuses it (ApplyFailed), which fails
// here. The sandbox's guards are each checked in source/sandbox's tests.
func TestBombsStallNothingApplied(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	opts := sandbox.DefaultOptions()
	opts.Limits = budget.Limits{Wall: 5 * time.Second, CPU: time.Minute}
	startAgent(t, agentOptions{namespace: ns, render: sandboxed(t, opts, &renders{started: map[string]int{}, ended: map[string]int{}})})
	createVariables(t, c, ns, map[string]string{"BIG": strings.Repeat("x", 1_000_000)}, nil)
	r := newRepo(t)
	first := r.commit(map[string]string{
		"subst/cm.yaml":              configMap("subst", "ok"),
		"repeat/Chart.yaml":          "apiVersion: v2\nname: repeat\nversion: 0.1.0\n",
		"repeat/templates/main.yaml": configMap("repeat", "ok"),
		"range/Chart.yaml":           "apiVersion: v2\nname: range\nversion: 0.1.0\n",
		"range/templates/main.yaml":  configMap("range", "ok"),
	})
	paths := []string{"subst", "repeat", "range"}
	for _, p := range paths {
		gs := newGitSync(ns, p, r.url(), func(g *v1.GitSync) {
			g.Spec.Source.Path = p
			g.Spec.SubstituteFrom = []v1.SubstituteReference{{Kind: "ConfigMap", Name: "vars"}}
		})
		if err := c.Create(context.Background(), gs); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, c, client.ObjectKeyFromObject(gs), v1.ConditionReady, metav1.ConditionTrue, nil)
	}

	r.commit(map[string]string{
		"subst/cm.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: subst\ndata:\n  value: \"" + strings.Repeat("${BIG}", 700) + "\"\n",
		"repeat/templates/main.yaml": `{{ repeat 400 (repeat 1048576 "x") }}`,
		"range/templates/main.yaml":  rangeBomb,
	})
	want := map[string][]string{
		"subst":  {v1.ReasonSubstitutionFailed, "substitution exceeded its output size budget"},
		"repeat": {v1.ReasonRenderFailed, "render exceeded its memory budget"},
		"range":  {v1.ReasonRenderFailed, "render exceeded its deadline"},
	}
	for _, p := range paths {
		key := client.ObjectKey{Namespace: ns, Name: p}
		request(t, c, key, "bomb")
		gs := waitReason(t, c, key, want[p][0], want[p][1])
		if !strings.Contains(gs.Status.LastAppliedRevision, first) {
			t.Errorf("%s: lastAppliedRevision %q, want the first commit %s still", p, gs.Status.LastAppliedRevision, first)
		}
		cm, err := getCM(t, c, ns, p)
		if err != nil || cm.Data["value"] != "ok" {
			t.Errorf("%s: ConfigMap %v, %v; want the first commit's, neither changed nor pruned", p, cm.Data, err)
		}
	}
}
