package git

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"gitsync.dev/gitsync/internal/gittest"
)

// TestOpenStoresAreBounded: a Fetcher that has seen more repositories than
// MaxOpenRepos keeps only that many stores open, and a closed store is
// reopened from disk: its recorded last commit survives, so the next fetch
// is incremental and reports the previous commit.
func TestOpenStoresAreBounded(t *testing.T) {
	root := t.TempDir()
	opts := DefaultOptions()
	opts.Dir, opts.MaxOpenRepos = t.TempDir(), 2
	f, err := NewFetcher(opts)
	if err != nil {
		t.Fatal(err)
	}
	checkout := func(src Source) (Revision, string) {
		t.Helper()
		rev, err := f.Resolve(t.Context(), src)
		if err != nil {
			t.Fatalf("Resolve: %v", err)
		}
		if rev, err = f.Fetch(t.Context(), src, rev); err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		dir, err := f.Checkout(t.Context(), src, rev)
		if err != nil {
			t.Fatalf("Checkout: %v", err)
		}
		defer os.RemoveAll(dir)
		got, err := os.ReadFile(filepath.Join(dir, "a.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return rev, string(got)
	}

	var repos []*gittest.Repo
	var first Revision
	for i := range 5 {
		r := gittest.NewRepo(t, filepath.Join(root, fmt.Sprint("r", i)))
		r.Commit("one", map[string]string{"a.yaml": fmt.Sprintf("v: %d\n", i)})
		repos = append(repos, r)
		rev, got := checkout(Source{URL: "file://" + r.Dir, Ref: Ref{Branch: "main"}})
		if want := fmt.Sprintf("v: %d\n", i); got != want {
			t.Errorf("repository %d checked out %q, want %q", i, got, want)
		}
		if i == 0 {
			first = rev
		}
		if n := f.openRepos(); n > opts.MaxOpenRepos {
			t.Errorf("after %d repositories %d stores open, want at most %d", i+1, n, opts.MaxOpenRepos)
		}
	}

	c2 := repos[0].Commit("two", map[string]string{"a.yaml": "v: 0.2\n"})
	rev, got := checkout(Source{URL: "file://" + repos[0].Dir, Ref: Ref{Branch: "main"}})
	if got != "v: 0.2\n" || rev.Commit != c2 {
		t.Errorf("reopened store checked out %q at %s, want %q at %s", got, rev.Commit, "v: 0.2\n", c2)
	}
	if rev.Previous != first.Commit || rev.Rewritten {
		t.Errorf("reopened store: previous %q rewritten %t, want previous %s (the store on disk was reused) and not rewritten", rev.Previous, rev.Rewritten, first.Commit)
	}
	if n := f.openRepos(); n > opts.MaxOpenRepos {
		t.Errorf("%d stores open, want at most %d", n, opts.MaxOpenRepos)
	}
}

// TestContentKeyGivesStoresBack: ContentKey, which the revision cache calls
// on every load, gives its store back, so MaxOpenRepos still bounds the
// stores the agent keeps open (a handle it kept made every store it ever
// keyed look in use forever).
func TestContentKeyGivesStoresBack(t *testing.T) {
	root := t.TempDir()
	opts := DefaultOptions()
	opts.Dir, opts.MaxOpenRepos = t.TempDir(), 2
	f, err := NewFetcher(opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		r := gittest.NewRepo(t, filepath.Join(root, fmt.Sprint("r", i)))
		r.Commit("one", map[string]string{"deploy/a.yaml": fmt.Sprintf("v: %d\n", i)})
		src := Source{URL: r.URL(), Ref: Ref{Branch: "main"}, Path: "deploy"}
		rev, err := f.Resolve(t.Context(), src)
		if err != nil {
			t.Fatalf("Resolve: %v", err)
		}
		if rev, err = f.Fetch(t.Context(), src, rev); err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		key, err := f.ContentKey(src, rev.Commit)
		if err != nil || !strings.HasPrefix(key, "tree:") {
			t.Fatalf("ContentKey = %q, %v; want a tree key", key, err)
		}
		if n := f.openRepos(); n > opts.MaxOpenRepos {
			t.Errorf("after %d repositories %d stores open, want at most %d", i+1, n, opts.MaxOpenRepos)
		}
	}
}

// TestIdleStoresKeepNoObjects: a store nobody holds keeps no decoded
// objects. The cache only helps while a fetch or checkout walks a commit;
// kept between them, an agent of 1,000 repositories held the blobs of
// every rendered commit (~1 KB per managed object).
func TestIdleStoresKeepNoObjects(t *testing.T) {
	opts := DefaultOptions()
	opts.Dir = t.TempDir()
	f, err := NewFetcher(opts)
	if err != nil {
		t.Fatal(err)
	}
	r := gittest.NewRepo(t, t.TempDir())
	commit := r.Commit("one", map[string]string{"deploy/a.yaml": "v: 1\n"})
	src := Source{URL: r.URL(), Ref: Ref{Branch: "main"}, Path: "deploy"}
	rev, err := f.Resolve(t.Context(), src)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if rev, err = f.Fetch(t.Context(), src, rev); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if _, err := f.CheckoutTree(t.Context(), src, rev, "."); err != nil {
		t.Fatalf("CheckoutTree: %v", err)
	}
	lr := f.repos[repoKey(src.URL)]
	if lr == nil || lr.users != 0 {
		t.Fatalf("store of %s: %+v, want one nobody holds", src.URL, lr)
	}
	if _, ok := lr.objects.Get(plumbing.NewHash(commit)); ok {
		t.Errorf("the idle store still caches commit %s", commit)
	}
	// Still usable: a second checkout reads the objects from disk again.
	if _, err := f.CheckoutTree(t.Context(), src, rev, "."); err != nil {
		t.Fatalf("CheckoutTree after the cache was emptied: %v", err)
	}
}
