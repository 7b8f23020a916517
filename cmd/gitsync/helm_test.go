package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gitsync.dev/gitsync/internal/testcharts"
)

// guestbookChart is the shared Helm chart at charts/web of a work tree,
// with its values file elsewhere in it and a CI file beside the chart.
var guestbookChart = testcharts.GuestbookChart("charts/web")

// TestHelmChartApplyThenDiff: a chart directory renders like helm template
// (release name from --name, values file and --helm-set), applies, and then
// diffs in sync: helm's rendered empty maps and labels leave no difference.
func TestHelmChartApplyThenDiff(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	writeFiles(t, dir, guestbookChart)
	chart := filepath.Join(dir, "charts", "web")
	flags := []string{"--name", "shop", "--helm-values", filepath.Join(dir, "env", "prod.yaml"), "--helm-set", "service.port=8080"}

	r := gitsyncIn(t, ns, append([]string{"diff", chart}, flags...)...)
	wantCode(t, r, 1)
	want := []string{
		"+ Deployment/" + ns + "/shop-guestbook (create)",
		"+ Service/" + ns + "/shop-guestbook (create)",
	}
	got := changeLines(r.stdout)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("before apply (-want +got):\n%s\n%s", diff, r)
	}

	r = gitsyncIn(t, ns, append([]string{"apply", chart}, flags...)...)
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "2 created") {
		t.Errorf("apply summary lacks \"2 created\":\n%s", r)
	}
	r = gitsyncIn(t, ns, append([]string{"diff", chart}, flags...)...)
	wantCode(t, r, 0)
	if got := changeLines(r.stdout); len(got) != 0 {
		t.Errorf("apply then diff: want no differences, got %q\n%s", got, r)
	}

	// A new value is a difference again, in the field it sets.
	r = gitsyncIn(t, ns, "diff", chart, "--name", "shop", "--helm-values", filepath.Join(dir, "env", "prod.yaml"), "--helm-set", "service.port=9090")
	wantCode(t, r, 1)
	if !strings.Contains(r.stdout, "9090") {
		t.Errorf("--helm-set service.port=9090: diff does not show it:\n%s", r)
	}
}

// TestHelmValuesConfined: a values file outside the render's root is
// refused, naming it, before anything is read or sent.
func TestHelmValuesConfined(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	writeFiles(t, dir, guestbookChart)
	outside := filepath.Join(t.TempDir(), "values.yaml")
	writeFiles(t, filepath.Dir(outside), map[string]string{"values.yaml": "replicaCount: 9\n"})
	r := gitsync(t, "diff", filepath.Join(dir, "charts", "web"), "--helm-values", outside)
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "--helm-values "+outside+" lies outside "+dir) {
		t.Errorf("want a refusal naming the file and the root:\n%s", r)
	}
}

// TestIgnoreFlagsAndFiles: a plain directory with files that are not
// objects renders once they are ignored: a CI file by default, a values file
// by .gitsyncignore, a draft by --ignore.
func TestIgnoreFlagsAndFiles(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"cm.yaml":                 configMap("a", "k", "v"),
		"bitbucket-pipelines.yml": "pipelines: {}\n",
		"values.yaml":             "replicas: 3\n",
		".gitsyncignore":          "values.yaml\n",
		"draft.yaml":              "kind: [\n",
	})
	r := gitsyncIn(t, ns, "diff", dir)
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "draft.yaml") {
		t.Errorf("without --ignore the draft stalls the render, naming it:\n%s", r)
	}
	r = gitsyncIn(t, ns, "diff", dir, "--ignore", "draft.yaml")
	wantCode(t, r, 1)
	if diff := cmp.Diff([]string{"+ ConfigMap/" + ns + "/a (create)"}, changeLines(r.stdout)); diff != "" {
		t.Errorf("(-want +got):\n%s\n%s", diff, r)
	}
}
