package gittest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepoDriver: commits, a deleted file, a branch and a tag pushed to a
// bare repository are what a client of the Server sees.
func TestRepoDriver(t *testing.T) {
	root := t.TempDir()
	NewBare(t, filepath.Join(root, "srv", "app.git"))
	work := NewRepo(t, filepath.Join(root, "work"))
	work.Git("remote", "add", "origin", filepath.Join(root, "srv", "app.git"))
	first := work.Commit("one", map[string]string{"a/x.yaml": "x: 1\n", "b.yaml": "b: 1\n"})
	work.Tag("v1")
	second := work.Commit("two", map[string]string{"b.yaml": ""})
	work.Branch("feature")
	third := work.Commit("three", map[string]string{"a/x.yaml": "x: 3\n"})
	work.Checkout("main")
	if got := work.Head(); got != second {
		t.Errorf("Checkout main: HEAD %s, want %s", got, second)
	}
	work.Push("origin", "main", "feature", "v1")

	srv := New(t, filepath.Join(root, "srv"), Options{})
	refs := work.Git("ls-remote", srv.URL+"/app.git")
	for _, want := range []string{first + "\trefs/tags/v1", second + "\trefs/heads/main", third + "\trefs/heads/feature"} {
		if !strings.Contains(refs, want) {
			t.Errorf("ls-remote lacks %q:\n%s", want, refs)
		}
	}
	clone := OpenRepo(t, filepath.Join(root, "clone"))
	work.Git("clone", "-q", srv.URL+"/app.git", clone.Dir)
	if _, err := os.Stat(filepath.Join(clone.Dir, "b.yaml")); !os.IsNotExist(err) {
		t.Errorf("b.yaml deleted by the second commit is in the clone (stat: %v)", err)
	}
	if got := clone.Head(); got != second {
		t.Errorf("clone HEAD %s, want main's %s", got, second)
	}
}
