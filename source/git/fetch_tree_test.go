package git

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gitsync.dev/gitsync/internal/gittest"
)

// TestReadTreeIsCheckout: ReadTree holds the files CheckoutTree writes for
// the same directory, with the same content, at the same paths; a tree
// with a symlink, or over MaxCheckoutBytes, is ErrNotInMemory (the caller
// checks it out, which confines and caps as before).
func TestReadTreeIsCheckout(t *testing.T) {
	root := t.TempDir()
	repo := gittest.NewRepo(t, filepath.Join(root, "app"))
	c := repo.Commit("init", map[string]string{
		"deploy/a.yaml":       "a: 1\n",
		"deploy/sub/b.yml":    "b: 2\n",
		"deploy/notes.txt":    "not a manifest\n",
		"deploy/empty/.keep":  "k",
		"elsewhere/c.yaml":    "c: 3\n",
		"linked/target.yaml":  "t: 1\n",
		"linked/inner/x.yaml": "x: 1\n",
	})
	if err := os.Symlink("target.yaml", filepath.Join(repo.Dir, "linked/inner/link.yaml")); err != nil {
		t.Fatal(err)
	}
	c = repo.Commit("symlink", nil)
	f := newTestFetcher(t)
	src := Source{URL: repo.Dir, Ref: Ref{Commit: c}}
	rev, err := f.Resolve(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fetch(t.Context(), src, rev); err != nil {
		t.Fatal(err)
	}
	dir, err := f.CheckoutTree(t.Context(), src, rev, "deploy")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	fsys, err := f.ReadTree(t.Context(), src, rev, "deploy")
	if err != nil {
		t.Fatal(err)
	}
	list := func(fsys fs.FS) []string {
		var out []string
		err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == "." {
				return err
			}
			entry := p + "/"
			if !d.IsDir() {
				b, err := fs.ReadFile(fsys, p)
				if err != nil {
					return err
				}
				entry = p + "=" + string(b)
			}
			out = append(out, entry)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want, got := list(os.DirFS(dir)), list(fsys)
	if !slices.Equal(want, got) || len(want) != 7 {
		t.Errorf("in memory %q\nchecked out %q", got, want)
	}
	if _, err := f.ReadTree(t.Context(), src, rev, "linked"); !errors.Is(err, ErrNotInMemory) || !strings.Contains(err.Error(), "linked/inner/link.yaml") {
		t.Errorf("tree with a symlink: %v, want ErrNotInMemory naming it", err)
	}
	f.opts.MaxCheckoutBytes = 8
	if _, err := f.ReadTree(t.Context(), src, rev, "deploy"); !errors.Is(err, ErrNotInMemory) {
		t.Errorf("tree over MaxCheckoutBytes: %v, want ErrNotInMemory", err)
	}
}
