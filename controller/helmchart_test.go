package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/chartrepotest"
	"gitsync.dev/gitsync/source/git"
)

// TestHelmChartWithGitValues: spec.helm.chart renders a chart of a Helm
// repository (named by alias, credentials from spec.helm.repositories)
// with a values file of the Git source, whose path holds no Chart.yaml.
// The revision names the commit and the chart; a values commit is applied
// with the same chart, and a newer version published in range is applied
// without a commit. A chart of an OCI registry renders the same values.
//
// Checked: with the content key of the path's own tree (Fetcher.Inputs in
// place of ChartInputs), the render of 1.0.0 is served for 1.1.0 and the
// ConfigMap keeps chart leaf-1.0.0.
func TestHelmChartWithGitValues(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	charts := chartrepotest.NewHTTPRepo(t)
	charts.RequireAuth("charts", "chart-pw-5e2")
	charts.Add(t, chartDir(t, "leaf", "1.0.0"))
	charts.Add(t, chartDir(t, "leaf", "2.0.0")) // out of range
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: ns},
		StringData: map[string]string{"username": "charts", "password": "chart-pw-5e2"}}); err != nil {
		t.Fatal(err)
	}
	r := newRepo(t)
	commit1 := r.commit(map[string]string{"env/prod/values.yaml": "greeting: from git\n"})
	gs := newGitSync(ns, "web", r.url(), func(g *v1.GitSync) {
		g.Spec.Source.Path = "env/prod"
		g.Spec.Interval = metav1.Duration{Duration: time.Second}
		g.Spec.Helm = &v1.HelmSpec{
			Chart:        &v1.HelmChartRef{Repository: "@charts", Name: "leaf", Version: "1.x"},
			ValuesFiles:  []string{"env/prod/values.yaml"},
			Repositories: []v1.HelmRepository{{Name: "charts", URL: charts.URL(), SecretRef: &v1.LocalObjectReference{Name: "charts"}}},
		}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	got := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	rev, ok := git.ParseRevision(got.Status.LastAppliedRevision)
	if !ok || rev.Commit != commit1 || !strings.HasPrefix(rev.Chart, "leaf@1.0.0@sha256:") {
		t.Fatalf("applied %q, want main@sha1:%s+chart:leaf@1.0.0@sha256:…", got.Status.LastAppliedRevision, commit1)
	}
	wantCM := func(what, greeting, chart string) {
		t.Helper()
		cm, err := getCM(t, c, ns, "web-leaf")
		if err != nil || cm.Data["greeting"] != greeting || cm.Labels["chart"] != chart {
			t.Fatalf("%s: ConfigMap web-leaf %v %v %v; want greeting %q of chart %s", what, cm.Data, cm.Labels, err, greeting, chart)
		}
	}
	wantCM("first sync", "from git", "leaf-1.0.0")

	commit2 := r.commit(map[string]string{"env/prod/values.yaml": "greeting: from git, again\n"})
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, commit2)
	})
	wantCM("a values commit", "from git, again", "leaf-1.0.0")

	charts.Add(t, chartDir(t, "leaf", "1.1.0"))
	got = waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, "+chart:leaf@1.1.0@sha256:")
	})
	if rev, _ := git.ParseRevision(got.Status.LastAppliedRevision); rev.Commit != commit2 {
		t.Errorf("a new chart version applied as %q, want the same commit %s", got.Status.LastAppliedRevision, commit2)
	}
	wantCM("a new chart version", "from git, again", "leaf-1.1.0")
	assertNotShown(t, c, ns, &syncBuffer{}, got, "chart-pw-5e2")

	reg := chartrepotest.NewRegistry(t)
	reg.Push(t, chartDir(t, "cache", "0.4.0"))
	fromOCI := newGitSync(ns, "cache", r.url(), func(g *v1.GitSync) {
		g.Spec.Source.Path = "env/prod"
		g.Spec.Helm = &v1.HelmSpec{
			Chart:       &v1.HelmChartRef{Repository: reg.URL(), Name: "cache", Version: "0.4.0"},
			ValuesFiles: []string{"env/prod/values.yaml"},
		}
	})
	if err := c.Create(ctx, fromOCI); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, c, client.ObjectKeyFromObject(fromOCI), v1.ConditionReady, metav1.ConditionTrue, nil)
	if !strings.Contains(got.Status.LastAppliedRevision, commit2+"+chart:cache@0.4.0@sha256:") {
		t.Errorf("applied %q from the registry, want the commit and cache@0.4.0", got.Status.LastAppliedRevision)
	}
	if cm, err := getCM(t, c, ns, "cache-cache"); err != nil || cm.Data["greeting"] != "from git, again" {
		t.Errorf("ConfigMap cache-cache: %v %v", cm.Data, err)
	}
}
