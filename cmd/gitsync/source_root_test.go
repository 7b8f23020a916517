package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderLocalRootOutsideGit: outside a Git work tree, an overlay whose
// base lies beside it renders when run from the directory above both, and
// run from inside the overlay it is refused with a hint, never read.
func TestRenderLocalRootOutsideGit(t *testing.T) {
	top := t.TempDir()
	if workTreeTop(top) != "" {
		t.Skip("the temp dir lies inside a Git work tree")
	}
	files := map[string]string{
		"base/kustomization.yaml":          "resources:\n- cm.yaml\n",
		"base/cm.yaml":                     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n",
		"overlays/prod/kustomization.yaml": "namePrefix: prod-\nresources:\n- ../../base\n",
	}
	for name, content := range files {
		p := filepath.Join(top, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	t.Chdir(top)
	got, err := (&SourceOptions{Dir: "overlays/prod"}).Render(context.Background())
	if err != nil {
		t.Fatalf("render overlays/prod from the top: %v", err)
	}
	if len(got.Objects) != 1 || got.Objects[0].GetName() != "prod-settings" {
		t.Errorf("objects = %v, want ConfigMap prod-settings", got.Objects)
	}

	t.Chdir(filepath.Join(top, "overlays", "prod"))
	_, err = (&SourceOptions{Dir: "."}).Render(context.Background())
	if err == nil || !strings.Contains(err.Error(), "leaves the repository root") || !strings.Contains(err.Error(), "run from the repository's top directory") {
		t.Errorf("render from inside the overlay = %v, want the confinement error with a hint", err)
	}
}
