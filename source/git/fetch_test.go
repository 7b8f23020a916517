package git

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/internal/gittest"
)

func newTestFetcher(t testing.TB) *Fetcher {
	t.Helper()
	opts := DefaultOptions()
	opts.Dir = t.TempDir()
	f, err := NewFetcher(opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// transports serves the same repositories over every supported protocol.
type transports struct {
	root string
	http *gitHTTPServer
	ssh  *gitSSHServer
}

func newTransports(t *testing.T) *transports {
	t.Helper()
	root := t.TempDir()
	return &transports{
		root: root,
		http: newGitHTTPServer(t, root, "alice", "s3cret-password"),
		ssh:  newGitSSHServer(t, root),
	}
}

// sources returns one Source per transport for repository name at ref.
func (tr *transports) sources(name string, ref Ref) map[string]Source {
	return map[string]Source{
		"https": {URL: tr.http.URL + "/" + name, Ref: ref, Auth: tr.http.auth()},
		"ssh":   {URL: tr.ssh.url(name), Ref: ref, Auth: &Auth{SSHPrivateKey: tr.ssh.ClientKey, KnownHosts: tr.ssh.KnownHosts}},
		"file":  {URL: "file://" + filepath.Join(tr.root, name), Ref: ref},
		"local": {URL: filepath.Join(tr.root, name), Ref: ref},
	}
}

func TestResolveAndCheckout(t *testing.T) {
	tr := newTransports(t)
	repo := gittest.NewRepo(t, filepath.Join(tr.root, "app"))
	c1 := repo.Commit("one", map[string]string{"deploy/a.yaml": "v: 1\n"})
	repo.Git("tag", "v1.0.0")
	c2 := repo.Commit("two", map[string]string{"deploy/a.yaml": "v: 2\n"})
	repo.Git("tag", "-a", "-m", "release", "v1.2.0") // annotated: must peel
	c3 := repo.Commit("three", map[string]string{"deploy/a.yaml": "v: 3\n"})
	repo.Git("tag", "v2.0.0")
	repo.Git("tag", "not-a-version")
	c4 := repo.Commit("four", map[string]string{"deploy/a.yaml": "v: 4\n"})

	tests := []struct {
		name     string
		ref      Ref
		want     Revision
		wantFile string
	}{
		{"branch", Ref{Branch: "main"}, Revision{Ref: "main", Commit: c4}, "v: 4\n"},
		{"lightweight tag", Ref{Tag: "v1.0.0"}, Revision{Ref: "v1.0.0", Commit: c1}, "v: 1\n"},
		{"annotated tag", Ref{Tag: "v1.2.0"}, Revision{Ref: "v1.2.0", Commit: c2}, "v: 2\n"},
		{"semver picks highest in range", Ref{Semver: ">=1.0.0 <2.0.0"}, Revision{Ref: "v1.2.0", Commit: c2}, "v: 2\n"},
		{"semver caret", Ref{Semver: "^2"}, Revision{Ref: "v2.0.0", Commit: c3}, "v: 3\n"},
		{"exact commit not at a tip", Ref{Commit: c2}, Revision{Commit: c2}, "v: 2\n"},
	}
	for proto := range tr.sources("app", Ref{}) {
		t.Run(proto, func(t *testing.T) {
			f := newTestFetcher(t)
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					src := tr.sources("app", tc.ref)[proto]
					rev, err := f.Resolve(t.Context(), src)
					if err != nil {
						t.Fatalf("Resolve: %v", err)
					}
					tc.want.URL = displayURL(src.URL)
					if diff := cmp.Diff(tc.want, rev); diff != "" {
						t.Errorf("Resolve (-want +got):\n%s", diff)
					}
					dir, err := f.Checkout(t.Context(), src, rev)
					if err != nil {
						t.Fatalf("Checkout: %v", err)
					}
					defer os.RemoveAll(dir)
					got, err := os.ReadFile(filepath.Join(dir, "deploy/a.yaml"))
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(tc.wantFile, string(got)); diff != "" {
						t.Errorf("checked out file (-want +got):\n%s", diff)
					}
				})
			}
		})
	}
}

func TestResolveMissingRef(t *testing.T) {
	tr := newTransports(t)
	repo := gittest.NewRepo(t, filepath.Join(tr.root, "app"))
	repo.Commit("one", map[string]string{"a.yaml": "a: 1\n"})
	repo.Git("branch", "feature")
	repo.Git("tag", "v1.0.0")
	f := newTestFetcher(t)
	for _, ref := range []Ref{{Branch: "feature"}, {Tag: "v1.0.0"}} {
		if _, err := f.Resolve(t.Context(), tr.sources("app", ref)["https"]); err != nil {
			t.Fatalf("Resolve %s before delete: %v", ref, err)
		}
	}
	repo.Git("branch", "-D", "feature")
	repo.Git("tag", "-d", "v1.0.0")

	tests := []struct {
		name string
		ref  Ref
	}{
		{"deleted branch", Ref{Branch: "feature"}},
		{"deleted tag", Ref{Tag: "v1.0.0"}},
		{"never existed", Ref{Branch: "nope"}},
		{"semver range with no tag", Ref{Semver: ">=3.0.0"}},
	}
	for _, tc := range tests {
		for proto, src := range tr.sources("app", tc.ref) {
			t.Run(tc.name+"/"+proto, func(t *testing.T) {
				rev, err := f.Resolve(t.Context(), src)
				if !errors.Is(err, ErrRefNotFound) {
					t.Fatalf("Resolve = %v, %v; want ErrRefNotFound", rev, err)
				}
				if rev != (Revision{}) {
					t.Errorf("Resolve returned a revision with the error: %v", rev)
				}
			})
		}
	}
}

func TestCheckoutMissingCommit(t *testing.T) {
	tr := newTransports(t)
	repo := gittest.NewRepo(t, filepath.Join(tr.root, "app"))
	repo.Commit("one", map[string]string{"a.yaml": "a: 1\n"})
	f := newTestFetcher(t)
	missing := strings.Repeat("ab", 20)
	for proto, src := range tr.sources("app", Ref{Commit: missing}) {
		t.Run(proto, func(t *testing.T) {
			rev, err := f.Resolve(t.Context(), src)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			_, err = f.Checkout(t.Context(), src, rev)
			if !errors.Is(err, ErrRefNotFound) {
				t.Fatalf("Checkout = %v; want ErrRefNotFound", err)
			}
		})
	}
}

func TestFetchFollowsRewrittenHistory(t *testing.T) {
	tr := newTransports(t)
	repo := gittest.NewRepo(t, filepath.Join(tr.root, "app"))
	base := repo.Commit("base", map[string]string{"a.yaml": "a: 0\n"})
	old := repo.Commit("old", map[string]string{"a.yaml": "a: 1\n"})

	type step struct {
		name   string
		change func() string // mutates the remote, returns the new tip
		want   Revision      // Ref, Commit, Previous, Rewritten
	}
	var amended, ff1, ff3 string
	steps := []step{
		{"first fetch", func() string { return old }, Revision{Ref: "main", Commit: old}},
		{"force-pushed amend", func() string {
			repo.Git("reset", "-q", "--hard", base)
			amended = repo.Commit("amended", map[string]string{"a.yaml": "a: 2\n"})
			return amended
		}, Revision{Ref: "main", Previous: old, Rewritten: true}},
		{"fast-forward by one", func() string {
			ff1 = repo.Commit("ff1", map[string]string{"b.yaml": "b: 1\n"})
			return ff1
		}, Revision{Ref: "main", Previous: "amended", Rewritten: false}},
		{"fast-forward by three", func() string {
			repo.Commit("ff2", map[string]string{"b.yaml": "b: 2\n"})
			repo.Commit("ff3", map[string]string{"b.yaml": "b: 3\n"})
			ff3 = repo.Commit("ff4", map[string]string{"b.yaml": "b: 4\n"})
			return ff3
		}, Revision{Ref: "main", Previous: "ff1", Rewritten: false}},
		{"reset back to an ancestor", func() string {
			repo.Git("reset", "-q", "--hard", base)
			return base
		}, Revision{Ref: "main", Previous: "ff4", Rewritten: true}},
	}
	for proto, src := range tr.sources("app", Ref{Branch: "main"}) {
		t.Run(proto, func(t *testing.T) {
			repo.Git("reset", "-q", "--hard", old)
			f := newTestFetcher(t)
			named := map[string]string{}
			for _, s := range steps {
				tip := s.change()
				named[s.name] = tip
				rev, err := f.Resolve(t.Context(), src)
				if err != nil {
					t.Fatalf("%s: Resolve: %v", s.name, err)
				}
				rev, err = f.Fetch(t.Context(), src, rev)
				if err != nil {
					t.Fatalf("%s: Fetch: %v", s.name, err)
				}
				want := s.want
				want.URL, want.Commit = displayURL(src.URL), tip
				switch want.Previous {
				case "amended":
					want.Previous = amended
				case "ff1":
					want.Previous = ff1
				case "ff4":
					want.Previous = ff3
				}
				if diff := cmp.Diff(want, rev); diff != "" {
					t.Errorf("%s: revision (-want +got):\n%s", s.name, diff)
				}
			}
		})
	}
}

func TestResolveUnchangedHeadCostsNoFetch(t *testing.T) {
	tr := newTransports(t)
	repo := gittest.NewRepo(t, filepath.Join(tr.root, "app"))
	repo.Commit("one", map[string]string{"a.yaml": "a: 1\n"})
	f := newTestFetcher(t)
	src := tr.sources("app", Ref{Branch: "main"})["https"]
	poll := func() {
		t.Helper()
		rev, err := f.Resolve(t.Context(), src)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Fetch(t.Context(), src, rev); err != nil {
			t.Fatal(err)
		}
	}
	poll()
	if got := tr.http.UploadPack.Load(); got != 1 {
		t.Fatalf("first poll: %d upload-pack requests, want 1", got)
	}
	tr.http.ResetCounts()
	poll()
	poll()
	if got, want := [2]int64{tr.http.ListRefs.Load(), tr.http.UploadPack.Load()}, [2]int64{2, 0}; got != want {
		t.Errorf("two unchanged polls: [info/refs, upload-pack] = %v, want %v", got, want)
	}

	repo.Commit("two", map[string]string{"a.yaml": "a: 2\n"})
	tr.http.ResetCounts()
	poll()
	if got := tr.http.UploadPack.Load(); got != 1 {
		t.Errorf("poll after a push: %d upload-pack requests, want 1", got)
	}
}

func TestCheckoutWritesSymlinksAsLinks(t *testing.T) {
	root := t.TempDir()
	repo := gittest.NewRepo(t, filepath.Join(root, "app"))
	outside := t.TempDir()
	// A symlink named "esc" to a directory outside, then a commit that
	// replaces it with a directory: the tree has only the directory, but make
	// sure symlinks are written as links and never followed for writes.
	if err := os.Symlink(outside, filepath.Join(repo.Dir, "esc")); err != nil {
		t.Fatal(err)
	}
	c := repo.Commit("links", map[string]string{"deploy/a.yaml": "a: 1\n"})
	f := newTestFetcher(t)
	src := Source{URL: repo.Dir, Ref: Ref{Commit: c}}
	rev, err := f.Resolve(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := f.Checkout(t.Context(), src, rev)
	if err != nil {
		t.Fatal(err)
	}
	target, err := os.Readlink(filepath.Join(dir, "esc"))
	if err != nil || target != outside {
		t.Errorf("esc = %q, %v; want a symlink to %q", target, err, outside)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 0 {
		t.Errorf("checkout wrote %d entries outside its directory", len(entries))
	}
	if !strings.HasPrefix(dir, filepath.Join(f.opts.Dir, "work")) {
		t.Errorf("checkout dir %q not under the fetcher's work dir", dir)
	}
}

func TestSourceValidate(t *testing.T) {
	sha := strings.Repeat("a", 40)
	tests := []struct {
		name string
		src  Source
		ok   bool
	}{
		{"branch", Source{URL: "https://h/x", Ref: Ref{Branch: "main"}}, true},
		{"commit", Source{URL: "https://h/x", Ref: Ref{Commit: sha}}, true},
		{"semver", Source{URL: "https://h/x", Ref: Ref{Semver: "~1.2"}}, true},
		{"no ref", Source{URL: "https://h/x"}, false},
		{"two refs", Source{URL: "https://h/x", Ref: Ref{Branch: "main", Tag: "v1"}}, false},
		{"short commit", Source{URL: "https://h/x", Ref: Ref{Commit: "abc123"}}, false},
		{"bad semver", Source{URL: "https://h/x", Ref: Ref{Semver: "not a range"}}, false},
		{"bad branch name", Source{URL: "https://h/x", Ref: Ref{Branch: "a..b"}}, false},
		{"empty url", Source{Ref: Ref{Branch: "main"}}, false},
		{"path escapes", Source{URL: "https://h/x", Ref: Ref{Branch: "main"}, Path: "../../etc"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.src.Validate()
			if tc.ok != (err == nil) {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidSource) {
				t.Errorf("Validate() = %v, want ErrInvalidSource", err)
			}
		})
	}
}

func TestRevisionString(t *testing.T) {
	sha := strings.Repeat("0123456789", 4)
	if diff := cmp.Diff("main@sha1:"+sha, Revision{Ref: "main", Commit: sha}.String()); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff("sha1:"+sha, Revision{Commit: sha}.String()); diff != "" {
		t.Error(diff)
	}
}

// A force push that drops the last commit brings back content that only the
// parent holds. The shallow local store never had it, while an incremental
// fetch lets the server assume it did (the parent is reachable from our
// have): Fetch must notice and still produce the complete tree. A revert is
// the friendly variant of the same move.
func TestFetchRestoresContentFromOlderHistory(t *testing.T) {
	tests := []struct {
		name   string
		change func(r *gittest.Repo)
	}{
		{"revert", func(r *gittest.Repo) { r.Git("revert", "--no-edit", "HEAD") }},
		{"drop last commit and push another", func(r *gittest.Repo) {
			r.Git("reset", "-q", "--hard", "HEAD~1")
			r.Commit("other", map[string]string{"deploy/other.yaml": "o: 1\n"})
		}},
	}
	tr := newTransports(t)
	repo := gittest.NewRepo(t, filepath.Join(tr.root, "app"))
	repo.Commit("a", map[string]string{"deploy/a.yaml": "a: 0\n", "deploy/keep.yaml": "k: 1\n"})
	tip := repo.Commit("b", map[string]string{"deploy/a.yaml": "a: 1\n"})
	// With a reachability bitmap (as large hosts have), git excludes every
	// object reachable from our haves, not only the edge trees.
	repo.Git("repack", "-q", "-a", "-d", "-b")
	for _, tc := range tests {
		for proto, src := range tr.sources("app", Ref{Branch: "main"}) {
			t.Run(tc.name+"/"+proto, func(t *testing.T) {
				repo.Git("reset", "-q", "--hard", tip)
				f := newTestFetcher(t)
				rev, err := f.Resolve(t.Context(), src)
				if err == nil {
					_, err = f.Fetch(t.Context(), src, rev)
				}
				if err != nil {
					t.Fatal(err)
				}
				tc.change(repo)
				rev, err = f.Resolve(t.Context(), src)
				if err != nil {
					t.Fatal(err)
				}
				dir, err := f.Checkout(t.Context(), src, rev)
				if err != nil {
					t.Fatalf("Checkout: %v", err)
				}
				defer os.RemoveAll(dir)
				got, _ := os.ReadFile(filepath.Join(dir, "deploy/a.yaml"))
				if diff := cmp.Diff("a: 0\n", string(got)); diff != "" {
					t.Errorf("deploy/a.yaml (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// A crafted tree lists "esc" twice: first a symlink to a directory outside,
// then a directory of the same name holding a file. Writing naively would put
// the file outside the work dir through the link; Checkout must fail instead.
func TestCheckoutRejectsEntryThroughSymlink(t *testing.T) {
	root := t.TempDir()
	repo := gittest.NewRepo(t, filepath.Join(root, "app"))
	outside := t.TempDir()
	r, err := git.PlainOpen(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	st := r.Storer
	blob := func(content string) plumbing.Hash {
		o := st.NewEncodedObject()
		o.SetType(plumbing.BlobObject)
		w, _ := o.Writer()
		w.Write([]byte(content))
		w.Close()
		h, err := st.SetEncodedObject(o)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	tree := func(entries ...object.TreeEntry) plumbing.Hash {
		o := st.NewEncodedObject()
		if err := (&object.Tree{Entries: entries}).Encode(o); err != nil {
			t.Fatal(err)
		}
		h, err := st.SetEncodedObject(o)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	inner := tree(object.TreeEntry{Name: "pwned.yaml", Mode: filemode.Regular, Hash: blob("x: 1\n")})
	top := tree(
		object.TreeEntry{Name: "esc", Mode: filemode.Symlink, Hash: blob(outside)},
		object.TreeEntry{Name: "esc", Mode: filemode.Dir, Hash: inner},
	)
	sig := object.Signature{Name: "t", Email: "t@example.com"}
	co := st.NewEncodedObject()
	if err := (&object.Commit{Author: sig, Committer: sig, Message: "evil", TreeHash: top}).Encode(co); err != nil {
		t.Fatal(err)
	}
	commit, err := st.SetEncodedObject(co)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetReference(plumbing.NewHashReference("refs/heads/evil", commit)); err != nil {
		t.Fatal(err)
	}

	f := newTestFetcher(t)
	src := Source{URL: repo.Dir, Ref: Ref{Branch: "evil"}}
	rev, err := f.Resolve(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := f.Checkout(t.Context(), src, rev)
	if err == nil {
		os.RemoveAll(dir)
		t.Error("Checkout of a tree that writes through a symlink succeeded")
	} else if !strings.Contains(err.Error(), "checkout: commit") || !strings.Contains(err.Error(), "esc") {
		t.Errorf("Checkout failed for another reason: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("Checkout wrote %d entries outside its directory", len(entries))
	}
	work, _ := os.ReadDir(filepath.Join(f.opts.Dir, "work"))
	if len(work) != 0 {
		t.Errorf("failed Checkout left %d work dirs behind", len(work))
	}
}

// TestDefaultBranch: with no ref given, the remote's HEAD names the branch,
// whatever it is called, over every transport.
func TestDefaultBranch(t *testing.T) {
	tr := newTransports(t)
	repo := gittest.NewRepo(t, filepath.Join(tr.root, "app"))
	repo.Commit("one", map[string]string{"a.yaml": "a: 1\n"})
	repo.Git("branch", "-m", "main", "trunk")
	repo.Git("branch", "other")
	f := newTestFetcher(t)
	for proto, src := range tr.sources("app", Ref{}) {
		t.Run(proto, func(t *testing.T) {
			got, err := f.DefaultBranch(t.Context(), src)
			if err != nil || got != "trunk" {
				t.Fatalf("DefaultBranch = %q, %v; want trunk", got, err)
			}
		})
	}
}
