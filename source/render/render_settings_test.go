package render

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/ignore"
)

// writeRepo writes files (path → content) below a new directory.
func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func cm(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
}

func TestRenderIgnore(t *testing.T) {
	repo := writeRepo(t, map[string]string{
		"apps/web/deploy.yaml":              cm("web"),
		"apps/web/.gitlab-ci.yml":           "stages: [test]\n",
		"apps/web/azure-pipelines.yml":      "trigger: [main]\n",
		"apps/web/renovate.json":            `{"extends": ["config:base"]}`,
		"apps/web/values.yaml":              "replicas: 3\n",
		"apps/web/tests/fixture.yaml":       "input: 1\n",
		"apps/web/draft.yaml":               cm("draft"),
		"apps/web/keep/draft.yaml":          cm("kept-draft"),
		"apps/web/keep/.gitsyncignore":      "!draft.yaml\n",
		"apps/web/.gitsyncignore":           "tests/\nvalues.yaml\n",
		"apps/api/values.yaml":              cm("api-values"), // the web directory's file does not reach here
		".gitsyncignore":                    "draft.yaml\n",
		"apps/web/secret-plan.yaml":         "not: an object\n",
		"apps/web/sub/kustomization.yaml":   "resources: [cm.yaml]\n",
		"apps/web/sub/cm.yaml":              cm("from-kustomize"),
		"apps/web/sub/ignored-by-spec.yaml": "unread\n", // never listed by the kustomization
	})
	tests := []struct {
		name    string
		path    string
		extra   string
		want    []string
		wantErr string
	}{
		{
			name: "defaults, root and subdirectory files, negation",
			path: "apps/web", extra: "secret-plan.yaml\n",
			want: []string{"ConfigMap/from-kustomize", "ConfigMap/kept-draft", "ConfigMap/web"},
		},
		{
			name:    "without spec.ignore the stray file stalls the render",
			path:    "apps/web",
			wantErr: "secret-plan.yaml",
		},
		{
			name: "spec.ignore wins over a repository negation",
			path: "apps/web", extra: "secret-plan.yaml\n/apps/web/keep/\n",
			want: []string{"ConfigMap/from-kustomize", "ConfigMap/web"},
		},
		{
			name: "a subdirectory's rules stay in it",
			path: "apps/api",
			want: []string{"ConfigMap/api-values"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.Settings.Ignore = ignore.Options{Extra: tt.extra}
			r, err := Render(context.Background(), repo, tt.path, opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, subjects(r.Objects)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRenderIgnoredFileNotRead proves an ignored file is never read, not
// read and dropped: one over the per-file cap would fail the render.
func TestRenderIgnoredFileNotRead(t *testing.T) {
	repo := writeRepo(t, map[string]string{
		"cm.yaml":        cm("a"),
		"big.yaml":       strings.Repeat("# padding\n", 100),
		".gitsyncignore": "big.yaml\n",
	})
	opts := DefaultOptions()
	opts.MaxFileBytes = 200
	r, err := Render(context.Background(), repo, ".", opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ConfigMap/a"}, subjects(r.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
}

func TestRenderHelmChart(t *testing.T) {
	repo := writeRepo(t, map[string]string{
		"charts/web/Chart.yaml":            "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"charts/web/values.yaml":           "size: 1\n",
		"charts/web/templates/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  size: {{ .Values.size | quote }}\n",
		"charts/web/templates/bad.yaml":    "{{ if .Values.broken }}kind: [\n{{ end }}",
		"charts/web/templates/secret.yaml": "{{ if .Values.badSecret }}apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  password: [hunter2\n{{ end }}",
		"env/prod.yaml":                    "size: 3\n",
		"apps/Chart.yaml":                  "apiVersion: v2\nname: apps\nversion: 0.1.0\n",
		"plain/cm.yaml":                    cm("plain"),
		"plain/chart/Chart.yaml":           "apiVersion: v2\nname: inner\nversion: 0.1.0\n",
	})
	render := func(path string, h *helm.Options) (*Rendered, error) {
		opts := DefaultOptions()
		opts.Settings.Helm = h
		return Render(context.Background(), repo, path, opts)
	}
	h := helm.DefaultOptions()
	h.ReleaseName, h.Namespace, h.ValuesFiles = "shop", "prod", []string{"env/prod.yaml"}
	r, err := render("charts/web", &h)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ConfigMap/shop-cm"}, subjects(r.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if got := r.Objects[0].Object["data"].(map[string]any)["size"]; got != "3" {
		t.Errorf("size = %v, want 3 from env/prod.yaml", got)
	}
	if r, err := render("charts/web", nil); err != nil || r.Objects[0].GetName() != "web-cm" {
		t.Errorf("without settings: %v, %v; want ConfigMap/web-cm", err, r)
	}

	for _, tt := range []struct {
		name, path string
		opts       func(*helm.Options)
		class      error
		want       string
	}{
		{name: "values file outside", path: "charts/web", opts: func(o *helm.Options) { o.ValuesFiles = []string{"../../etc/passwd"} },
			class: errHelm, want: "values file must be a path inside the repository"},
		{name: "rendered YAML error names the template", path: "charts/web", opts: func(o *helm.Options) { o.Values = map[string]any{"broken": true} },
			class: errInvalidYAML, want: "charts/web/templates/bad.yaml"},
		{name: "rendered Secret error hides the value", path: "charts/web", opts: func(o *helm.Options) { o.Values = map[string]any{"badSecret": true} },
			class: errInvalidYAML, want: "charts/web/templates/secret.yaml"},
		{name: "chart below a plain directory", path: "plain", class: errHelm, want: "plain/chart: Helm chart inside a plain directory"},
		{name: "empty chart renders nothing", path: "apps"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := h
			if tt.opts != nil {
				tt.opts(&o)
			}
			r, err := render(tt.path, &o)
			if tt.class == nil {
				if err != nil || len(r.Objects) != 0 {
					t.Fatalf("got %v, %v; want no objects and no error", r, err)
				}
				return
			}
			if !errors.Is(err, tt.class) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want class %v naming %q", err, tt.class, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error reveals a Secret value: %v", err)
			}
		})
	}
}

func TestSettingsKeys(t *testing.T) {
	a := helm.Options{ReleaseName: "a"}
	b := helm.Options{ReleaseName: "b"}
	if (Settings{Helm: &a}).HelmKey() == (Settings{Helm: &b}).HelmKey() {
		t.Error("different release names share a key")
	}
	if (Settings{}).IgnoreKey() != "" || (Settings{Ignore: ignore.Options{Extra: "x"}}).IgnoreKey() == "" {
		t.Error("ignore keys wrong")
	}
}
