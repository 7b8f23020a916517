package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/object"
)

// subjects lists the rendered objects as "Kind/ns/name" in output order.
func subjects(objs []*unstructured.Unstructured) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = object.IDOf(o).String()
	}
	return out
}

func TestRenderHappyPaths(t *testing.T) {
	tests := []struct {
		name string
		path string
		want []string
	}{
		{
			name: "plain directory, recursive, multi-document, yaml/yml/json, hidden skipped",
			path: "plain",
			want: []string{
				"ConfigMap/shop/settings", "Namespace/shop", "Service/shop/web", "ServiceAccount/shop/web",
				"Deployment/shop/web",
			},
		},
		{
			name: "kustomize overlay with namePrefix, patch and configMapGenerator",
			path: "kustomize/overlays/prod",
			want: []string{"ConfigMap/prod/prod-web-config-2g9k859fk4", "Service/prod/prod-web", "Deployment/prod/prod-web"},
		},
		{
			name: "kustomize base",
			path: "kustomize/base",
			want: []string{"Service/web", "Deployment/web"},
		},
		{
			name: "CRD and CR",
			path: "crd",
			want: []string{"CustomResourceDefinition/widgets.example.com", "Widget.example.com/shop/blue"},
		},
		{
			name: "Lists expanded, empty List renders nothing",
			path: "lists",
			want: []string{"ConfigMap/shop/a", "ConfigMap/shop/b", "ConfigMap/shop/c"},
		},
		{
			name: "plain directory with a kustomization below it, built as a unit",
			path: "nested",
			want: []string{"Namespace/nested", "Service/nested/nested-web", "Deployment/nested/nested-web"},
		},
		{
			name: "single file",
			path: "crd/widget.yaml",
			want: []string{"Widget.example.com/shop/blue"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render(context.Background(), "testdata/render", tt.path, DefaultOptions())
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if diff := cmp.Diff(tt.want, subjects(got.Objects)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(got.Digest, "sha256:") || len(got.Digest) != len("sha256:")+64 {
				t.Errorf("digest = %q, want sha256:<64 hex>", got.Digest)
			}
		})
	}
}

func TestRenderKustomizeOverlayContent(t *testing.T) {
	got, err := Render(context.Background(), "testdata/render", "kustomize/overlays/prod", DefaultOptions())
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	var deploy, cm *unstructured.Unstructured
	for _, o := range got.Objects {
		switch o.GetKind() {
		case "Deployment":
			deploy = o
		case "ConfigMap":
			cm = o
		}
	}
	if deploy == nil || cm == nil {
		t.Fatalf("missing Deployment or ConfigMap in %v", subjects(got.Objects))
	}
	replicas, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas")
	if replicas != 3 {
		t.Errorf("patched replicas = %d, want 3", replicas)
	}
	ref, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	envFrom := ref[0].(map[string]any)["envFrom"].([]any)[0].(map[string]any)["configMapRef"].(map[string]any)["name"]
	if envFrom != cm.GetName() {
		t.Errorf("Deployment refers to ConfigMap %v, want generated name %q", envFrom, cm.GetName())
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if diff := cmp.Diff(map[string]string{"app.properties": "mode=production\n"}, data); diff != "" {
		t.Errorf("generated ConfigMap data (-want +got):\n%s", diff)
	}
	if got := deploy.GetLabels()["app.kubernetes.io/name"]; got != "web" {
		t.Errorf("base label = %q, want web", got)
	}
}

func TestRenderObjectContent(t *testing.T) {
	got, err := Render(context.Background(), "testdata/render", "plain", DefaultOptions())
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	for _, o := range got.Objects {
		if o.GetKind() != "Deployment" {
			continue
		}
		// Numbers decode as int64, as unstructured requires (DeepCopy panics on int or float64 for integers).
		if r, found, err := unstructured.NestedInt64(o.Object, "spec", "replicas"); err != nil || !found || r != 2 {
			t.Errorf("replicas = %d, %v, %v; want 2 as int64", r, found, err)
		}
		_ = o.DeepCopy()
	}
}

// copyTree copies a testdata directory into a fresh temp dir and returns it.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestRenderDigestIgnoresLayoutButNotContent(t *testing.T) {
	ctx := context.Background()
	base, err := Render(ctx, "testdata/render", "plain", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}

	moved := copyTree(t, "testdata/render/plain")
	if err := os.Rename(filepath.Join(moved, "config", "extra.yml"), filepath.Join(moved, "zz-extra.yaml")); err != nil {
		t.Fatal(err)
	}
	again, err := Render(ctx, moved, ".", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest != base.Digest {
		t.Errorf("moving a file changed the digest: %s != %s", again.Digest, base.Digest)
	}

	changed := copyTree(t, "testdata/render/plain")
	app := filepath.Join(changed, "deploy", "app.yaml")
	b, _ := os.ReadFile(app)
	if err := os.WriteFile(app, []byte(strings.Replace(string(b), "replicas: 2", "replicas: 5", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	other, err := Render(ctx, changed, ".", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if other.Digest == base.Digest {
		t.Errorf("changing replicas did not change the digest")
	}
}
