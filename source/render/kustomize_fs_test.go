package render

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// newTestConfinedFS makes repo/ (with a file, a directory, an inside symlink
// and symlinks out) next to outside/, and a confinedFS on repo/.
func newTestConfinedFS(t *testing.T) (*confinedFS, string) {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"repo/app/cm.yaml":    configMap("a"),
		"repo/app/link.yaml":  "symlink:cm.yaml",
		"repo/passwd":         "symlink:/etc/passwd",
		"repo/up":             "symlink:../outside",
		"outside/secret.yaml": configMap("secret"),
	})
	repo, err := openRepoRoot(filepath.Join(dir, "repo"), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { repo.Close() })
	return newConfinedFS(context.Background(), repo, DefaultOptions()), repo.dir
}

// The file system refuses escapes on its own, whatever the kustomization
// check before it caught: it is the second line of defence.
func TestConfinedFSRefusesEscapes(t *testing.T) {
	outsidePaths := []string{"/etc/passwd", "../outside/secret.yaml", "passwd", "up/secret.yaml", "app/../../outside/secret.yaml"}
	for _, p := range outsidePaths {
		t.Run(p, func(t *testing.T) {
			c, root := newTestConfinedFS(t)
			abs := p
			if !filepath.IsAbs(p) {
				abs = filepath.Join(root, p)
			}
			if _, err := c.ReadFile(abs); !errors.Is(err, ErrOutsideRoot) {
				t.Errorf("ReadFile error = %v, want ErrOutsideRoot", err)
			}
			if f, err := c.Open(abs); !errors.Is(err, ErrOutsideRoot) {
				if f != nil {
					f.Close()
				}
				t.Errorf("Open error = %v, want ErrOutsideRoot", err)
			}
			if _, _, err := c.CleanedAbs(abs); !errors.Is(err, ErrOutsideRoot) {
				t.Errorf("CleanedAbs error = %v, want ErrOutsideRoot", err)
			}
			if c.Exists(abs) {
				t.Errorf("Exists admitted %s", abs)
			}
			if !errors.Is(c.violation(), ErrOutsideRoot) {
				t.Errorf("violation = %v, want ErrOutsideRoot recorded", c.violation())
			}
		})
	}
}

func TestConfinedFSReadsInside(t *testing.T) {
	c, root := newTestConfinedFS(t)
	b, err := c.ReadFile(filepath.Join(root, "app", "link.yaml"))
	if err != nil || string(b) != configMap("a") {
		t.Fatalf("ReadFile via inside symlink = %q, %v", b, err)
	}
	d, f, err := c.CleanedAbs(filepath.Join(root, "app", "link.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{filepath.Join(root, "app"), "cm.yaml"}, []string{d.String(), f}); diff != "" {
		t.Errorf("CleanedAbs resolves the symlink (-want +got):\n%s", diff)
	}
	names, err := c.ReadDir(filepath.Join(root, "app"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"cm.yaml", "link.yaml"}, names); diff != "" {
		t.Errorf("ReadDir (-want +got):\n%s", diff)
	}
	matches, err := c.Glob(filepath.Join(root, "app", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{filepath.Join(root, "app", "cm.yaml"), filepath.Join(root, "app", "link.yaml")}, matches); diff != "" {
		t.Errorf("Glob (-want +got):\n%s", diff)
	}
	// passwd and up lead outside: a glob that matches them fails closed.
	if _, err := c.Glob(filepath.Join(root, "*")); !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("Glob over escaping symlinks error = %v, want ErrOutsideRoot", err)
	}
	if _, err := c.Glob("/etc/*"); !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("Glob /etc/* error = %v, want ErrOutsideRoot", err)
	}
	for name, err := range map[string]error{
		"Create":    func() error { _, err := c.Create(filepath.Join(root, "x")); return err }(),
		"WriteFile": c.WriteFile(filepath.Join(root, "x"), nil), "Mkdir": c.Mkdir(filepath.Join(root, "d")),
		"MkdirAll": c.MkdirAll(filepath.Join(root, "d")), "RemoveAll": c.RemoveAll(filepath.Join(root, "app")),
	} {
		if !errors.Is(err, errReadOnly) {
			t.Errorf("%s error = %v, want read-only", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "app", "cm.yaml")); err != nil {
		t.Errorf("RemoveAll touched the tree: %v", err)
	}
}

// TestOverlayRoot: the root of a local render holds the directory and the
// kustomization directories it names by relative path, transitively; a
// remote base, a file resource and a base reached through a symlink do not
// widen it.
func TestOverlayRoot(t *testing.T) {
	top := t.TempDir()
	elsewhere := t.TempDir()
	for name, content := range map[string]string{
		"a/overlays/prod/kustomization.yaml": "resources:\n- ../../base\n",
		"a/base/kustomization.yaml":          "resources:\n- ../../shared/common\n- cm.yaml\n",
		"shared/common/kustomization.yaml":   "resources: []\n",
		"a/file/kustomization.yaml":          "resources:\n- ../base/cm.yaml\n- https://github.com/example/repo//base\n",
		"a/plain/cm.yaml":                    "kind: ConfigMap\n",
		"a/base/cm.yaml":                     "kind: ConfigMap\n",
		"a/linked/kustomization.yaml":        "resources:\n- base\n",
	} {
		p := filepath.Join(top, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(elsewhere, "kustomization.yaml"), []byte("resources: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(top, "a/linked/base")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, want string }{
		{"a/overlays/prod", "."},
		{"a/base", "."},
		{"a/file", "a/file"},
		{"a/plain", "a/plain"},
		{"a/linked", "a/linked"},
	} {
		got, err := OverlayRoot(filepath.Join(top, tc.dir))
		if err != nil {
			t.Fatalf("%s: %v", tc.dir, err)
		}
		if want := filepath.Join(top, tc.want); got != want {
			t.Errorf("OverlayRoot(%s) = %s, want %s", tc.dir, got, want)
		}
	}
}
