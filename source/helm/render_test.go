package helm

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"gitsync.dev/gitsync/source/budget"
)

// rootFiles is Files over an os.Root, the confinement the render package
// uses, without its caps.
type rootFiles struct{ root *os.Root }

func (r rootFiles) ReadDir(dir string) ([]fs.DirEntry, error) {
	return fs.ReadDir(r.root.FS(), dir)
}

func (r rootFiles) Stat(name string) (fs.FileInfo, error) { return r.root.Stat(name) }

func (r rootFiles) ReadFile(_ context.Context, name string) ([]byte, error) {
	return r.root.ReadFile(name)
}

func (r rootFiles) Charge(string, int64) error { return nil }

func (r rootFiles) Archive(_ context.Context, _ string, a Archive) ([]byte, error) {
	return os.ReadFile(a.File)
}

// writeTree writes files (path → content) below dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func openRoot(t *testing.T, dir string) rootFiles {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return rootFiles{root}
}

// webChart is a chart with values, release fields, a vendored dependency
// with a condition, a CRD, a partial, NOTES.txt, a test hook and an install
// hook.
var webChart = map[string]string{
	"charts/web/Chart.yaml": `apiVersion: v2
name: web
version: 0.1.0
dependencies:
- name: cache
  version: 0.1.0
  condition: cache.enabled
`,
	"charts/web/values.yaml":            "replicas: 1\nimage: nginx:1.27\ncache:\n  enabled: true\n  size: 1\n",
	"charts/web/.helmignore":            "*.bak\n",
	"charts/web/templates/_helpers.tpl": `{{- define "web.name" -}}{{ .Release.Name }}-web{{- end -}}`,
	"charts/web/templates/NOTES.txt":    "Thanks for installing {{ .Release.Name }}.\n",
	"charts/web/templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "web.name" . }}
  namespace: {{ .Release.Namespace }}
spec:
  replicas: {{ .Values.replicas }}
  template:
    spec:
      containers:
      - name: web
        image: {{ .Values.image }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ include "web.name" . }}
`,
	"charts/web/templates/old.yaml.bak": "not: a manifest\n",
	"charts/web/templates/tests/ping.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-ping
  annotations:
    helm.sh/hook: test
`,
	"charts/web/templates/migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
`,
	"charts/web/crds/widgets.yaml":                 "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n",
	"charts/web/charts/cache/Chart.yaml":           "apiVersion: v2\nname: cache\nversion: 0.1.0\n",
	"charts/web/charts/cache/values.yaml":          "size: 5\n",
	"charts/web/charts/cache/templates/store.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cache\ndata:\n  size: {{ .Values.size | quote }}\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n",
	"env/prod.yaml":                                "replicas: 3\ncache:\n  size: 9\n",
}

// summary is what a test compares: one line per document.
func summary(t *testing.T, ms []Manifest) []string {
	t.Helper()
	var out []string
	for _, m := range ms {
		var o struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
			Spec     struct{ Replicas int }
			Data     map[string]string
		}
		if err := yaml.Unmarshal(m.Data, &o); err != nil {
			t.Fatalf("%s: %v", m.Path, err)
		}
		line := m.Path + " " + o.Kind + "/" + o.Metadata.Name
		if o.Metadata.Namespace != "" {
			line += " ns=" + o.Metadata.Namespace
		}
		if o.Spec.Replicas != 0 {
			line += " replicas=" + strings.Repeat("I", o.Spec.Replicas)
		}
		if o.Data["size"] != "" {
			line += " size=" + o.Data["size"] + " kube=" + o.Data["kube"]
		}
		out = append(out, line)
	}
	return out
}

func TestRender(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, webChart)
	files := openRoot(t, dir)
	base := DefaultOptions()
	base.ReleaseName, base.Namespace = "shop", "prod"

	tests := []struct {
		name string
		opts func(*Options)
		want []string
	}{
		{
			name: "chart defaults",
			want: []string{
				"charts/web/crds/widgets.yaml CustomResourceDefinition/widgets.example.com",
				"charts/web/charts/cache/templates/store.yaml ConfigMap/shop-cache size=1 kube=v1.37.0",
				"charts/web/templates/deploy.yaml Deployment/shop-web ns=prod replicas=I",
				"charts/web/templates/deploy.yaml Service/shop-web",
				"charts/web/templates/migrate.yaml Job/shop-migrate",
			},
		},
		{
			name: "values files then inline values",
			opts: func(o *Options) {
				o.ValuesFiles = []string{"env/prod.yaml"}
				o.Values = map[string]any{"replicas": 2}
			},
			want: []string{
				"charts/web/crds/widgets.yaml CustomResourceDefinition/widgets.example.com",
				"charts/web/charts/cache/templates/store.yaml ConfigMap/shop-cache size=9 kube=v1.37.0",
				"charts/web/templates/deploy.yaml Deployment/shop-web ns=prod replicas=II",
				"charts/web/templates/deploy.yaml Service/shop-web",
				"charts/web/templates/migrate.yaml Job/shop-migrate",
			},
		},
		{
			name: "release name defaults to the chart's, namespace to default",
			opts: func(o *Options) { o.ReleaseName, o.Namespace, o.IncludeCRDs = "", "", false },
			want: []string{
				"charts/web/charts/cache/templates/store.yaml ConfigMap/web-cache size=1 kube=v1.37.0",
				"charts/web/templates/deploy.yaml Deployment/web-web ns=default replicas=I",
				"charts/web/templates/deploy.yaml Service/web-web",
				"charts/web/templates/migrate.yaml Job/web-migrate",
			},
		},
		{
			name: "without CRDs, dependency disabled",
			opts: func(o *Options) {
				o.IncludeCRDs = false
				o.Values = map[string]any{"cache": map[string]any{"enabled": false}}
			},
			want: []string{
				"charts/web/templates/deploy.yaml Deployment/shop-web ns=prod replicas=I",
				"charts/web/templates/deploy.yaml Service/shop-web",
				"charts/web/templates/migrate.yaml Job/shop-migrate",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := base
			if tt.opts != nil {
				tt.opts(&opts)
			}
			ms, err := Render(context.Background(), files, "charts/web", opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, summary(t, ms)); diff != "" {
				t.Errorf("rendered (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderRefuses(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.yaml": "replicas: 7\n"})
	dir := t.TempDir()
	writeTree(t, dir, webChart)
	writeTree(t, dir, map[string]string{
		"charts/nodep/Chart.yaml":        "apiVersion: v2\nname: nodep\nversion: 0.1.0\ndependencies:\n- name: redis\n  version: 1.0.0\n  repository: https://charts.example.com\n",
		"charts/broken/Chart.yaml":       "apiVersion: v2\nname: broken\nversion: 0.1.0\n",
		"charts/broken/templates/x.yaml": "{{ .Values.missing.field }}\n",
		"charts/linkout/Chart.yaml":      "apiVersion: v2\nname: linkout\nversion: 0.1.0\n",
		"charts/old/Chart.yaml":          "apiVersion: v2\nname: old\nversion: 0.1.0\nkubeVersion: '<1.20'\n",
	})
	if err := os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(dir, "env-link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "charts/linkout/templates")); err != nil {
		t.Fatal(err)
	}
	files := openRoot(t, dir)
	base := DefaultOptions()
	base.ReleaseName, base.Namespace = "shop", "prod"

	tests := []struct {
		name  string
		chart string
		opts  func(*Options)
		want  string // in the error's text
	}{
		{name: "values file with ..", chart: "charts/web", opts: func(o *Options) { o.ValuesFiles = []string{"../../etc/passwd"} },
			want: "../../etc/passwd: values file must be a path inside the repository"},
		{name: "absolute values file", chart: "charts/web", opts: func(o *Options) { o.ValuesFiles = []string{"/etc/passwd"} },
			want: "values file must be a path inside the repository"},
		{name: "values file symlinked out", chart: "charts/web", opts: func(o *Options) { o.ValuesFiles = []string{"env-link.yaml"} },
			want: "escapes"},
		{name: "chart directory symlinked out", chart: "charts/linkout", want: "escapes"},
		{name: "dependency not vendored", chart: "charts/nodep", want: "dependencies redis are not in charts/"},
		{name: "template error", chart: "charts/broken", want: "template failed"},
		{name: "kubeVersion constraint", chart: "charts/old", want: "chart requires kubeVersion <1.20"},
		{name: "bad release name", chart: "charts/web", opts: func(o *Options) { o.ReleaseName = "Bad_Name" }, want: `release name "Bad_Name" is invalid`},
		{name: "output budget", chart: "charts/web", opts: func(o *Options) { o.Budget = budget.New(budget.Limits{OutputBytes: 100}) },
			want: "rendered manifests too large: Helm template exceeded its output size budget (100 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := base
			if tt.opts != nil {
				tt.opts(&opts)
			}
			ms, err := Render(context.Background(), files, tt.chart, opts)
			if err == nil {
				t.Fatalf("rendered %d manifests, want an error with %q", len(ms), tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "replicas: 7") || strings.Contains(err.Error(), outside) {
				t.Errorf("error reveals the outside file: %v", err)
			}
		})
	}
}

func TestIsChart(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, webChart)
	files := openRoot(t, dir)
	for _, tt := range []struct {
		dir  string
		want bool
	}{{"charts/web", true}, {"charts/web/charts/cache", true}, {"env", false}, {"missing", false}} {
		if got := IsChart(files, tt.dir); got != tt.want {
			t.Errorf("IsChart(%q) = %v, want %v", tt.dir, got, tt.want)
		}
	}
}

func TestDigest(t *testing.T) {
	a := Options{ReleaseName: "a", Namespace: "n", Values: map[string]any{"x": 1, "y": map[string]any{"z": true}}}
	b := Options{ReleaseName: "a", Namespace: "n", Values: map[string]any{"y": map[string]any{"z": true}, "x": 1}}
	if a.Digest() != b.Digest() {
		t.Error("same options, different digests")
	}
	for _, c := range []Options{
		{ReleaseName: "b", Namespace: "n", Values: a.Values},
		{ReleaseName: "a", Namespace: "m", Values: a.Values},
		{ReleaseName: "a", Namespace: "n", Values: map[string]any{"x": 2}},
		{ReleaseName: "a", Namespace: "n", Values: a.Values, ValuesFiles: []string{"v.yaml"}},
		{ReleaseName: "a", Namespace: "n", Values: a.Values, IncludeCRDs: true},
		{ReleaseName: "a", Namespace: "n", Values: a.Values, Capabilities: Capabilities{KubeVersion: "v1.33.0"}},
		{ReleaseName: "a", Namespace: "n", Values: a.Values, Capabilities: Capabilities{APIVersions: []string{"v1"}}},
	} {
		if c.Digest() == a.Digest() {
			t.Errorf("options %+v share the digest of %+v", c, a)
		}
	}
}

func TestRenderSchema(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		fmt.Fprint(w, `{"type": "object"}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	chart := func(name, schema string) map[string]string {
		return map[string]string{
			"c/" + name + "/Chart.yaml":         "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n",
			"c/" + name + "/values.yaml":        "replicas: 1\n",
			"c/" + name + "/values.schema.json": schema,
			"c/" + name + "/templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
		}
	}
	writeTree(t, dir, chart("typed", `{"type": "object", "properties": {"replicas": {"type": "integer"}}, "required": ["replicas"]}`))
	writeTree(t, dir, chart("fileref", `{"$ref": "file:///etc/passwd"}`))
	writeTree(t, dir, chart("httpref", `{"$ref": "`+srv.URL+`/schema.json"}`))
	writeTree(t, dir, chart("selfref", `{"$defs": {"n": {"type": "integer"}}, "properties": {"replicas": {"$ref": "#/$defs/n"}}}`))
	files := openRoot(t, dir)

	for _, tt := range []struct {
		chart  string
		values map[string]any
		want   string // "" for success
	}{
		{chart: "typed"},
		{chart: "typed", values: map[string]any{"replicas": "three"}, want: "values do not match values.schema.json"},
		{chart: "selfref"},
		{chart: "selfref", values: map[string]any{"replicas": "three"}, want: "values do not match values.schema.json"},
		{chart: "fileref", want: "$ref file:///etc/passwd not loaded"},
		{chart: "httpref", want: "not loaded: a chart's schema may only refer to itself"},
	} {
		t.Run(tt.chart+fmt.Sprint(tt.values), func(t *testing.T) {
			_, err := Render(context.Background(), files, "c/"+tt.chart, Options{Values: tt.values})
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the schema's $ref made %d HTTP requests, want 0", n)
	}
}

// TestRenderEndsDocumentsAsHelmDoes: a template's documents are trimmed
// and ended by one newline, as `helm template` prints them and as the
// release manifest `helm install` applies has them, so a block scalar that
// ends a template keeps its final line break; a CRD file is handed on
// whole, as Helm applies it, a newline added when it lacks one.
//
// Checked by handing on SplitManifests' documents as they are (the code
// before): the template's documents then end without a newline.
func TestRenderEndsDocumentsAsHelmDoes(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"c/Chart.yaml":       "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"c/templates/a.yaml": "kind: A\ndata:\n  conf: |\n    one\n---\nkind: B\ndata:\n  conf: |+\n    two\n\n\n{{- /* the template ends here */ -}}",
		"c/crds/x.yaml":      "  # indented comment\nkind: X\n---\nkind: Y\nd: |\n  three",
	})
	ms, err := Render(context.Background(), openRoot(t, dir), "c", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Path+": "+string(m.Data))
	}
	want := []string{
		"c/crds/x.yaml:   # indented comment\nkind: X\n---\nkind: Y\nd: |\n  three\n",
		"c/templates/a.yaml: kind: A\ndata:\n  conf: |\n    one\n",
		"c/templates/a.yaml: kind: B\ndata:\n  conf: |+\n    two\n",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("manifests (-want +got):\n%s", diff)
	}
}

// TestRenderCapabilities: a chart sees the capabilities it is given (the
// target cluster's), not Helm's defaults: an object gated on a served
// group/version/Kind appears only when the list has it, and the version is
// the cluster's, also for Chart.yaml's kubeVersion constraint.
func TestRenderCapabilities(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: mon\nversion: 0.1.0\nkubeVersion: \">=1.30.0-0\"\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kube\ndata:\n" +
			"  size: {{ .Capabilities.KubeVersion.Minor | quote }}\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n",
		"templates/sm.yaml": "{{- if .Capabilities.APIVersions.Has \"monitoring.coreos.com/v1/ServiceMonitor\" }}\n" +
			"apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: mon\n{{- end }}\n",
		"templates/pdb.yaml": "{{- if .Capabilities.APIVersions.Has \"monitoring.coreos.com/v1\" }}\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: group-served\n{{- end }}\n",
	})
	files := openRoot(t, dir)
	tests := []struct {
		name string
		caps Capabilities
		want []string
	}{{
		name: "no cluster",
		caps: Capabilities{},
		want: []string{"templates/cm.yaml ConfigMap/kube size=37 kube=v1.37.0"},
	}, {
		name: "cluster without the CRD",
		caps: Capabilities{KubeVersion: "v1.33.2", APIVersions: []string{"v1", "v1/ConfigMap", "apps/v1", "apps/v1/Deployment"}},
		want: []string{"templates/cm.yaml ConfigMap/kube size=33 kube=v1.33.2"},
	}, {
		name: "cluster serving the CRD",
		caps: Capabilities{KubeVersion: "v1.33.2+k3s1", APIVersions: []string{"v1", "monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor"}},
		want: []string{
			"templates/cm.yaml ConfigMap/kube size=33 kube=v1.33.2+k3s1",
			"templates/pdb.yaml ConfigMap/group-served",
			"templates/sm.yaml ServiceMonitor/mon",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultOptions()
			if tt.caps.KubeVersion != "" {
				opts.Capabilities = tt.caps
			}
			ms, err := Render(context.Background(), files, ".", opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, summary(t, ms)); diff != "" {
				t.Errorf("manifests (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("kubeVersion constraint", func(t *testing.T) {
		opts := DefaultOptions()
		opts.Capabilities = Capabilities{KubeVersion: "v1.29.4", APIVersions: []string{"v1"}}
		_, err := Render(context.Background(), files, ".", opts)
		if err == nil || !strings.Contains(err.Error(), "templates see v1.29.4") {
			t.Errorf("render for a v1.29 cluster: %v, want the kubeVersion constraint refused", err)
		}
	})
}
