package git

import (
	"path/filepath"
	"testing"

	"gitsync.dev/gitsync/internal/gittest"
)

// TestDescends: a fast-forward descends from the commit before it, a branch
// reset to an ancestor or force-pushed to a rewritten commit does not, also
// when the first fetch was shallow and the answer needs a deeper look.
//
// Checked by making Descends return true whenever the commits differ: the
// "reset" and "amended" cases then fail.
func TestDescends(t *testing.T) {
	tr := newTransports(t)
	repo := gittest.NewRepo(t, filepath.Join(tr.root, "app"))
	base := repo.Commit("base", map[string]string{"a.yaml": "a: 0\n"})
	mid := repo.Commit("mid", map[string]string{"a.yaml": "a: 1\n"})
	tip := repo.Commit("tip", map[string]string{"a.yaml": "a: 2\n"})
	repo.Git("checkout", "-q", "-b", "amend", base)
	amended := repo.Commit("amended", map[string]string{"a.yaml": "a: 3\n"})
	repo.Git("checkout", "-q", "main")

	src := tr.sources("app", Ref{Branch: "main"})["https"]
	f := newTestFetcher(t) // shallow: depth 1
	fetch := func(commit string) Revision {
		t.Helper()
		rev := Revision{URL: displayURL(src.URL), Ref: "main", Commit: commit}
		repo.Git("update-ref", "refs/heads/main", commit)
		rev, err := f.Fetch(t.Context(), src, rev)
		if err != nil {
			t.Fatalf("fetch %s: %v", commit, err)
		}
		return rev
	}
	tests := []struct {
		name           string
		from, to       string
		wantDescendant bool
	}{
		{"same commit", tip, tip, true},
		{"fast-forward by two", base, tip, true},
		{"reset back to an ancestor", tip, mid, false},
		{"force-pushed amend", tip, amended, false},
		{"fast-forward by one", mid, tip, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fetch(tt.from)
			rev := fetch(tt.to)
			got, err := f.Descends(t.Context(), src, rev, tt.from)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.wantDescendant {
				t.Errorf("Descends(%s from %s) = %t, want %t", tt.to[:7], tt.from[:7], got, tt.wantDescendant)
			}
		})
	}
	if _, err := f.Descends(t.Context(), src, Revision{Ref: "main", Commit: tip}, "main"); err == nil {
		t.Error("Descends accepted a branch name as the earlier commit")
	}
}
