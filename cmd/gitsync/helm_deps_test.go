package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"gitsync.dev/gitsync/internal/chartrepotest"
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
