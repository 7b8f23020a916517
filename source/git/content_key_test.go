package git

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/internal/gittest"
)

// TestContentKeys: the batch form gives each path the key its kind calls
// for (a self-contained tree, the trees a kustomization names, the whole
// repository when something may read anywhere, a missing path), the same as ContentKey one path at a
// time, and a commit that changes one path leaves the others' keys alone.
func TestContentKeys(t *testing.T) {
	repo := gittest.NewRepo(t, filepath.Join(t.TempDir(), "mono"))
	files := map[string]string{
		"plain/a.yaml":                 "a: 1\n",
		"other/b.yaml":                 "b: 1\n",
		"kust/kustomization.yaml":      "resources: [../plain/a.yaml]\n",
		"wide/kustomization.yaml":      "resources: [../top.yaml]\n",
		"top.yaml":                     "t: 1\n",
		"deep/inner/kustomization.yml": "resources: []\n",
		"chart/Chart.yaml":             "name: c\n",
		"ignored/.gitsyncignore":       "*.txt\n",
		"ignored/app/c.yaml":           "c: 1\n",
	}
	c1 := repo.Commit("one", files)
	c2 := repo.Commit("two", map[string]string{"other/b.yaml": "b: 2\n"})
	f := newTestFetcher(t)
	src := Source{URL: repo.URL(), Ref: Ref{Branch: "main"}}
	for _, commit := range []string{c1, c2} {
		at := Source{URL: src.URL, Ref: Ref{Commit: commit}}
		rev, err := f.Resolve(t.Context(), at)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Fetch(t.Context(), at, rev); err != nil {
			t.Fatal(err)
		}
	}
	paths := []string{"plain", "other", "kust", "deep", "wide", "chart", "ignored/app", "missing", "plain/a.yaml", "."}
	kinds := []string{"tree:", "tree:", "dirs:", "dirs:", "root:", "chart:", "root:", "commit:", "commit:", "root:"}
	keys := map[string][]string{}
	for _, commit := range []string{c1, c2} {
		got, err := f.ContentKeys(src, commit, paths)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range paths {
			if !strings.HasPrefix(got[i], kinds[i]) {
				t.Errorf("%s at %.7s: key %q, want a %s key", p, commit, got[i], kinds[i])
			}
			one, err := f.ContentKey(Source{URL: src.URL, Path: p}, commit)
			if err != nil || one != got[i] {
				t.Errorf("%s at %.7s: ContentKey = %q, %v; ContentKeys said %q", p, commit, one, err, got[i])
			}
		}
		keys[commit] = got
	}
	if keys[c1][0] != keys[c2][0] {
		t.Errorf("plain's key changed with a commit to other/: %q → %q", keys[c1][0], keys[c2][0])
	}
	if keys[c1][1] == keys[c2][1] {
		t.Errorf("other's key %q did not change with a commit to other/", keys[c1][1])
	}
	if diff := cmp.Diff(keys[c1][2:4], keys[c2][2:4]); diff != "" {
		t.Errorf("kustomization paths changed keys with a commit outside what they name (-c1 +c2):\n%s", diff)
	}
	if keys[c1][4] == keys[c2][4] {
		t.Errorf("wide names a file at the root, so reads the whole repository; its key %q did not change", keys[c1][4])
	}
}
