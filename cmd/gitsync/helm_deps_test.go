package main

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/chartrepotest"
	"gitsync.dev/gitsync/internal/gitsynctest"
)

// TestCLIChartDependencies: build, apply and diff of a chart directory
// whose dependencies come from a Helm repository and an OCI registry that
// ask for credentials download them with the user's Helm configuration
// (repositories.yaml, the registry's docker config): build prints what
// `helm dependency build && helm template` renders, apply applies it, diff
// is then in sync and a second apply writes nothing. Without the
// configuration, build fails naming the repository and prints nothing.
//
// Checked: without renderFlags.render downloading (HelmRepos.dependencies
// skipped), build exits 2 "not in charts/".
func TestCLIChartDependencies(t *testing.T) {
	ns := env.Namespace(t)
	web, reg := chartrepotest.NewHTTPRepo(t), chartrepotest.NewRegistry(t)
	for _, v := range []string{"1.2.0", "1.2.3"} {
		dir := t.TempDir()
		chartrepotest.WriteTree(t, dir, chartrepotest.Leaf("web", v))
		web.Add(t, dir)
	}
	leaf := t.TempDir()
	chartrepotest.WriteTree(t, leaf, chartrepotest.Leaf("cache", "0.5.1"))
	reg.Push(t, leaf)

	files := chartrepotest.Umbrella(web.URL(), reg.URL())
	home, helmDir := t.TempDir(), t.TempDir()
	chartrepotest.WriteTree(t, helmDir, files)
	chartrepotest.RunHelm(t, home, helmDir, "dependency", "update", ".", "--plain-http")
	lock, err := os.ReadFile(filepath.Join(helmDir, "Chart.lock"))
	if err != nil {
		t.Fatal(err)
	}
	want := chartrepotest.RunHelm(t, home, helmDir, "template", "platform", ".", "--namespace", ns)
	web.RequireAuth("robot", "web-s3cret")
	reg.RequireAuth("robot", "oci-s3cret")

	chart := filepath.Join(t.TempDir(), "platform")
	writeFiles(t, chart, files)
	writeFiles(t, chart, map[string]string{"Chart.lock": string(lock)})
	cfg := t.TempDir()
	repos := filepath.Join(cfg, "repositories.yaml")
	registry := filepath.Join(cfg, "config.json")
	auth := base64.StdEncoding.EncodeToString([]byte("robot:oci-s3cret"))
	writeFiles(t, cfg, map[string]string{
		"repositories.yaml": "apiVersion: v1\nrepositories:\n- name: webrepo\n  url: " + web.URL() + "\n  username: robot\n  password: web-s3cret\n",
		"config.json":       `{"auths": {"` + reg.Host() + `": {"auth": "` + auth + `"}}}`,
	})
	noConfig := []string{"--helm-repository-config", filepath.Join(cfg, "none.yaml"), "--helm-registry-config", filepath.Join(cfg, "none.json")}
	r := gitsync(t, append([]string{"build", chart, "--release-name", "platform"}, noConfig...)...)
	wantCode(t, r, 2)
	if r.stdout != "" || !strings.Contains(r.stderr, "none are configured") || strings.Contains(r.stderr, "s3cret") {
		t.Errorf("build without credentials: want a refusal naming the repository on stderr, nothing on stdout:\n%s", r)
	}

	withConfig := []string{"--helm-repository-config", repos, "--helm-registry-config", registry}
	r = gitsync(t, append([]string{"build", chart, "--release-name", "platform", "-o", "json"}, withConfig...)...)
	wantCode(t, r, 0)
	got := map[string]map[string]any{}
	for _, obj := range builtObjects(t, r.stdout, outputJSON) {
		data, _ := obj.Object["data"].(map[string]any)
		got[obj.GetName()] = data
	}
	n := 0
	for _, doc := range strings.Split(want, "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil || m == nil {
			continue
		}
		n++
		name := m["metadata"].(map[string]any)["name"].(string)
		data, ok := got[name]
		if !ok {
			t.Errorf("build lacks %s", name)
			continue
		}
		for k, v := range m["data"].(map[string]any) {
			if data[k] != v {
				t.Errorf("%s data.%s = %v, helm renders %v", name, k, data[k], v)
			}
		}
	}
	if n != 3 || len(got) != n {
		t.Errorf("build printed %d objects, helm %d (want 3)", len(got), n)
	}

	args := append([]string{"--name", "platform"}, withConfig...)
	wantCode(t, gitsyncIn(t, ns, append([]string{"apply", chart}, args...)...), 0)
	r = gitsyncIn(t, ns, append([]string{"diff", chart}, args...)...)
	wantCode(t, r, 0)
	if n := cliWrites(t, ns, append([]string{"apply", chart}, args...)...); n != 0 {
		t.Errorf("second apply sent %d writes, want 0", n)
	}
}

// TestBuildGitSyncChartDependencyCredentials: `build --gitsync` of a
// GitSync whose chart's dependencies need credentials reads them from the
// GitSync's spec.helm.repositories Secrets (as the user, as the agent reads
// them through its boundary) when the user's Helm configuration has none,
// and shows no value of them.
//
// Checked: with gitSyncPreview.render not reading prepare.ChartAccess, build
// exits 2 "none are configured".
func TestBuildGitSyncChartDependencyCredentials(t *testing.T) {
	ns := env.Namespace(t)
	c := statusClient(t)
	web, reg := chartrepotest.NewHTTPRepo(t), chartrepotest.NewRegistry(t)
	dir := t.TempDir()
	chartrepotest.WriteTree(t, dir, chartrepotest.Leaf("web", "1.2.3"))
	web.Add(t, dir)
	leaf := t.TempDir()
	chartrepotest.WriteTree(t, leaf, chartrepotest.Leaf("cache", "0.5.1"))
	reg.Push(t, leaf)
	web.RequireAuth("robot", "web-pw-77a")
	reg.RequireAuth("robot", "oci-pw-77b")

	checkout := t.TempDir()
	writeFiles(t, checkout, map[string]string{})
	for p, body := range chartrepotest.Umbrella(web.URL(), reg.URL()) {
		writeFiles(t, filepath.Join(checkout, "deploy"), map[string]string{p: body})
	}
	ctx := context.Background()
	auth := base64.StdEncoding.EncodeToString([]byte("robot:oci-pw-77b"))
	for name, data := range map[string]map[string]string{
		"web-repo": {"username": "robot", "password": "web-pw-77a"},
		"registry": {".dockerconfigjson": `{"auths": {"` + reg.Host() + `": {"auth": "` + auth + `"}}}`},
	} {
		if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}); err != nil {
			t.Fatal(err)
		}
	}
	gs := gitsynctest.New(ns, "platform", "https://git.example/platform", func(g *gitsyncv1.GitSync) {
		g.Spec.Helm = &gitsyncv1.HelmSpec{Repositories: []gitsyncv1.HelmRepository{
			{URL: web.URL(), SecretRef: &gitsyncv1.LocalObjectReference{Name: "web-repo"}},
			{URL: reg.URL(), SecretRef: &gitsyncv1.LocalObjectReference{Name: "registry"}},
		}}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	cfg := t.TempDir()
	noConfig := []string{"--helm-repository-config", filepath.Join(cfg, "none.yaml"), "--helm-registry-config", filepath.Join(cfg, "none.json")}
	r := gitsync(t, append([]string{"build", "--gitsync", ns + "/platform", checkout, "--kubeconfig", env.Kubeconfig, "-o", "json"}, noConfig...)...)
	wantCode(t, r, 0)
	names := map[string]bool{}
	for _, obj := range builtObjects(t, r.stdout, outputJSON) {
		names[obj.GetName()] = true
	}
	if !names["platform-web"] || !names["platform-cache"] {
		t.Errorf("build printed %v; want the dependencies web and cache rendered", names)
	}
	if strings.Contains(r.stdout+r.stderr, "pw-77") {
		t.Errorf("build shows a repository password:\n%s", r)
	}
}

// TestCLIChartDependencyAlias: a chart whose Chart.yaml names a
// dependency's repository "@webrepo" builds with the repository of that
// name in the user's repositories.yaml (as after `helm repo add`), and
// without it fails naming the alias and how to name it.
func TestCLIChartDependencyAlias(t *testing.T) {
	t.Parallel()
	web, reg := chartrepotest.NewHTTPRepo(t), chartrepotest.NewRegistry(t)
	dir := t.TempDir()
	chartrepotest.WriteTree(t, dir, chartrepotest.Leaf("web", "1.2.3"))
	web.Add(t, dir)
	leaf := t.TempDir()
	chartrepotest.WriteTree(t, leaf, chartrepotest.Leaf("cache", "0.5.1"))
	reg.Push(t, leaf)
	chart := filepath.Join(t.TempDir(), "platform")
	writeFiles(t, chart, chartrepotest.Umbrella(`"@webrepo"`, reg.URL()))
	cfg := t.TempDir()
	writeFiles(t, cfg, map[string]string{
		"repositories.yaml": "apiVersion: v1\nrepositories:\n- name: webrepo\n  url: " + web.URL() + "\n",
	})
	registry := []string{"--helm-registry-config", filepath.Join(cfg, "none.json")}
	r := gitsync(t, append([]string{"build", chart, "--release-name", "platform", "-o", "json", "--helm-repository-config", filepath.Join(cfg, "repositories.yaml")}, registry...)...)
	wantCode(t, r, 0)
	names := map[string]string{}
	for _, obj := range builtObjects(t, r.stdout, outputJSON) {
		names[obj.GetName()] = obj.GetLabels()["chart"]
	}
	if names["platform-web"] != "web-1.2.3" {
		t.Errorf("build printed %v; want platform-web of chart web-1.2.3 from the named repository", names)
	}
	r = gitsync(t, append([]string{"build", chart, "--helm-repository-config", filepath.Join(cfg, "none.yaml")}, registry...)...)
	wantCode(t, r, exitError)
	if !strings.Contains(r.stderr, "@webrepo") || !strings.Contains(r.stderr, "helm repo add webrepo") {
		t.Errorf("build without the name:\n%s", r)
	}
}
