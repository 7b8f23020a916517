package render

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/source/budget"
)

// bigCM is a ConfigMap whose one value has n bytes.
func bigCM(name string, n int) string {
	return cm(name) + "data:\n  v: " + strings.Repeat("x", n) + "\n"
}

// TestRenderOutputCountedWhileProduced: every stage charges its output to
// the render's budget as it produces it, so the render stops at the first
// document, resource or template over the budget: a later file (here one
// that is not even YAML) is never reached, and the error names where the
// budget ran out.
//
// Checked by removing the Charge calls in render_decode.go, kustomize.go and
// source/helm/render.go: each case then renders (or fails on the broken
// file, read after the budget was spent) and fails here.
func TestRenderOutputCountedWhileProduced(t *testing.T) {
	const limit = 3000
	tests := []struct {
		name   string
		files  map[string]string
		path   string
		wantAt string
		stage  budget.Stage
	}{
		{
			name: "plain YAML",
			files: map[string]string{
				"a.yaml": bigCM("a", 1500),
				"b.yaml": bigCM("b", 1500),
				"c.yaml": "kind: [\n",
			},
			path: ".", wantAt: "b.yaml:1: document 1: render budget exceeded", stage: budget.StagePlain,
		},
		{
			name: "JSON file",
			files: map[string]string{
				"a.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"v":"` + strings.Repeat("x", 3100) + `"}}`,
				"b.yaml": "kind: [\n",
			},
			path: ".", wantAt: "a.json:1: document 1: render budget exceeded", stage: budget.StagePlain,
		},
		{
			name: "kustomize output",
			files: map[string]string{
				"app/kustomization.yaml": "resources: [a.yaml, b.yaml]\n",
				"app/a.yaml":             bigCM("a", 1500),
				"app/b.yaml":             bigCM("b", 1600),
			},
			path: "app", wantAt: "app (kustomize output): render budget exceeded", stage: budget.StageKustomize,
		},
		{
			name: "Helm template output",
			files: map[string]string{
				"chart/Chart.yaml":         "apiVersion: v2\nname: c\nversion: 0.1.0\n",
				"chart/templates/a.yaml":   bigCM("a", 1500) + "---\n" + bigCM("b", 1600),
				"chart/templates/zzz.yaml": "{{ if true }}kind: [\n{{ end }}",
			},
			path: "chart", wantAt: "chart/templates/a.yaml: rendered manifests too large", stage: budget.StageHelm,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := writeRepo(t, tt.files)
			opts := DefaultOptions()
			opts.Budget = budget.New(budget.Limits{OutputBytes: limit})
			r, err := Render(context.Background(), repo, tt.path, opts)
			if err == nil {
				t.Fatalf("rendered %d objects, want the budget refused", len(r.Objects))
			}
			var re *Error
			var be *budget.ExceededError
			if !errors.As(err, &re) || !errors.Is(err, ErrOverBudget) || !errors.As(err, &be) {
				t.Fatalf("error %v is not an *Error of class ErrOverBudget with a *budget.ExceededError", err)
			}
			if !strings.HasPrefix(err.Error(), tt.wantAt) {
				t.Errorf("error %q, want it to start with %q", err, tt.wantAt)
			}
			if diff := cmp.Diff(budget.ExceededError{Stage: tt.stage, Resource: budget.Output, Limit: limit}, *be); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
			if used := opts.Budget.Used(); used > limit {
				t.Errorf("charged %d bytes, more than the %d-byte budget", used, limit)
			}
		})
	}
}

// TestRenderPlainOnly: with PlainOnly a path that needs kustomize or Helm,
// at its top or below a plain directory, is refused with ErrNeedsEngine
// before either runs; a plain path renders as usual.
func TestRenderPlainOnly(t *testing.T) {
	repo := writeRepo(t, map[string]string{
		"plain/a.yaml":                  cm("a"),
		"nested/a.yaml":                 cm("a"),
		"nested/app/kustomization.yaml": "resources: [b.yaml]\n",
		"nested/app/b.yaml":             cm("b"),
		"kust/kustomization.yaml":       "resources: [b.yaml]\n",
		"kust/b.yaml":                   cm("b"),
		"chart/Chart.yaml":              "apiVersion: v2\nname: c\nversion: 0.1.0\n",
	})
	opts := DefaultOptions()
	opts.PlainOnly = true
	for _, path := range []string{"nested", "kust", "chart"} {
		if _, err := Render(context.Background(), repo, path, opts); !errors.Is(err, ErrNeedsEngine) {
			t.Errorf("Render(%s) error = %v, want ErrNeedsEngine", path, err)
		}
	}
	r, err := Render(context.Background(), repo, "plain", opts)
	if err != nil || len(r.Objects) != 1 {
		t.Fatalf("Render(plain) = %v, %v; want one object", r, err)
	}
}
