package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sourcerender "gitsync.dev/gitsync/source/render"
)

// writeTree writes files below top; a value starting with "->" makes a
// symlink to the rest.
func writeTree(t *testing.T, top string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(top, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRenderLocalOverlayOutsideGit: outside a Git work tree, a local
// directory renders like `kustomize build DIR`: an overlay naming
// ../../base renders from anywhere (bases may sit outside DIR), while a
// file outside its kustomization's directory, and a symlink leaving the
// tree, are refused; --root sets the confinement root.
func TestRenderLocalOverlayOutsideGit(t *testing.T) {
	top := t.TempDir()
	if workTreeTop(top) != "" {
		t.Skip("the temp dir lies inside a Git work tree")
	}
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: outside\n"})
	writeTree(t, top, map[string]string{
		"app/base/kustomization.yaml":          "resources:\n- cm.yaml\n",
		"app/base/cm.yaml":                     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n",
		"app/overlays/prod/kustomization.yaml": "namePrefix: prod-\nresources:\n- ../../base\n",
		// A file (not a base) outside the overlay: kustomize refuses it.
		"app/overlays/file/kustomization.yaml": "resources:\n- ../../base/cm.yaml\n",
		// A symlink leaving the tree.
		"app/overlays/link/kustomization.yaml": "resources:\n- ../../base\n- cm.yaml\n",
		"app/overlays/link/cm.yaml":            "->" + filepath.Join(outside, "secret.yaml"),
		"app/plain/cm.yaml":                    "->" + filepath.Join(outside, "secret.yaml"),
	})
	render := func(o sourceOptions) ([]string, error) {
		got, err := o.Render(context.Background())
		if err != nil {
			return nil, err
		}
		var names []string
		for _, obj := range got.Objects {
			names = append(names, obj.GetName())
		}
		return names, nil
	}

	for name, cwd := range map[string]string{"from the overlay": filepath.Join(top, "app/overlays/prod"), "from elsewhere": outside} {
		t.Run(name, func(t *testing.T) {
			t.Chdir(cwd)
			names, err := render(sourceOptions{Dir: filepath.Join(top, "app/overlays/prod")})
			if err != nil || len(names) != 1 || names[0] != "prod-settings" {
				t.Errorf("render overlays/prod = %v, %v; want ConfigMap prod-settings", names, err)
			}
		})
	}
	for _, dir := range []string{"app/overlays/file", "app/overlays/link", "app/plain"} {
		_, err := render(sourceOptions{Dir: filepath.Join(top, dir)})
		if err == nil {
			t.Errorf("render %s: want a refusal, rendered", dir)
		}
		if dir != "app/overlays/file" && !errors.Is(err, sourcerender.ErrOutsideRoot) {
			t.Errorf("render %s = %v, want ErrOutsideRoot", dir, err)
		}
	}
	// --root narrower than the bases refuses them, with the hint.
	_, err := render(sourceOptions{Dir: filepath.Join(top, "app/overlays/prod"), Root: filepath.Join(top, "app/overlays")})
	if !errors.Is(err, sourcerender.ErrOutsideRoot) || !strings.Contains(err.Error(), "--root sets that directory") {
		t.Errorf("render with --root app/overlays = %v, want ErrOutsideRoot with the --root hint", err)
	}
	// --root must hold the directory.
	if _, err := render(sourceOptions{Dir: filepath.Join(top, "app/base"), Root: filepath.Join(top, "app/overlays")}); err == nil || !strings.Contains(err.Error(), "outside --root") {
		t.Errorf("render app/base with --root app/overlays = %v, want a refusal", err)
	}
	// A wider --root holds the base.
	names, err := render(sourceOptions{Dir: filepath.Join(top, "app/overlays/prod"), Root: top})
	if err != nil || len(names) != 1 {
		t.Errorf("render with --root top = %v, %v; want prod-settings", names, err)
	}
}
