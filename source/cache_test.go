package source

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/render"
)

// countingRenderer renders every regular file under path into a ConfigMap
// named after the file, with the file's content as data; it counts calls and
// fails on content "bad". It follows symlinks, like a real renderer may
// within the root. (The cache must work with any renderer.)
type countingRenderer struct {
	calls   atomic.Int64
	started chan struct{} // receives once per call, if non-nil
	release chan struct{} // calls block until closed, if non-nil
}

func (r *countingRenderer) render(ctx context.Context, root, path string, _ render.Settings) (*render.Rendered, error) {
	r.calls.Add(1)
	if r.started != nil {
		r.started <- struct{}{}
	}
	if r.release != nil {
		<-r.release
	}
	out := &render.Rendered{Objects: []*unstructured.Unstructured{}}
	var names []string
	err := filepath.WalkDir(filepath.Join(root, path), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(b)) == "bad" {
			return errors.New(d.Name() + ": bad manifest")
		}
		rel, _ := filepath.Rel(root, p)
		o := &unstructured.Unstructured{}
		o.SetAPIVersion("v1")
		o.SetKind("ConfigMap")
		o.SetName(strings.NewReplacer("/", "-", ".", "-").Replace(rel))
		unstructured.SetNestedField(o.Object, string(b), "data", "content")
		out.Objects = append(out.Objects, o)
		names = append(names, rel+"="+string(b))
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out.Digest = strings.Join(names, ";")
	return out, nil
}

// newTestFetcher returns a Fetcher keeping its stores in a temp dir.
func newTestFetcher(t testing.TB) *git.Fetcher {
	t.Helper()
	opts := git.DefaultOptions()
	opts.Dir = t.TempDir()
	f, err := git.NewFetcher(opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// serveGit serves the repositories under root over TLS, with basic auth when
// user is set, and returns the server and the credentials it accepts.
func serveGit(t testing.TB, root, user, pass string) (*gittest.Server, *git.Auth) {
	t.Helper()
	srv := gittest.New(t, root, gittest.Options{TLS: true, User: user, Password: pass})
	return srv, &git.Auth{Username: user, Password: pass, CAData: srv.CA}
}

func newTestCache(t testing.TB, r *countingRenderer) (*Cache, *git.Fetcher) {
	t.Helper()
	f := newTestFetcher(t)
	opts := DefaultCacheOptions()
	opts.Fetcher, opts.Render = f, r.render
	c, err := NewCache(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c, f
}

func TestCacheReusesRenderWhenPathUntouched(t *testing.T) {
	root := t.TempDir()
	srv, auth := serveGit(t, root, "alice", "pw-123456")
	repo := gittest.NewRepo(t, filepath.Join(root, "app"))
	repo.Commit("init", map[string]string{
		"apps/web/cm.yaml":           "web: 1\n",
		"docs/README.md":             "hello\n",
		"base/cm.yaml":               "base: 1\n",
		"overlay/kustomization.yaml": "resources: [../base]\n",
		"linked/cm.yaml":             "linked: 1\n",
	})
	if err := os.Symlink("../base/cm.yaml", filepath.Join(repo.Dir, "linked/base.yaml")); err != nil {
		t.Fatal(err)
	}
	repo.Commit("symlink", nil)

	// Each step commits a change, then Gets every path; want lists which
	// paths had to be rendered again.
	steps := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"first Get renders all", nil, []string{"apps/web", "linked", "overlay"}},
		// linked has a symlink, which may read anything in the repository, so
		// it is keyed by the root tree and any commit re-renders it; overlay's
		// kustomization names ../base, so it is keyed by overlay's and base's
		// trees; plain apps/web is keyed by its own tree.
		{"docs change renders only root-keyed paths", map[string]string{"docs/README.md": "changed\n"}, []string{"linked"}},
		{"web change", map[string]string{"apps/web/cm.yaml": "web: 2\n"}, []string{"apps/web", "linked"}},
		{"base change re-renders dependents", map[string]string{"base/cm.yaml": "base: 2\n"}, []string{"linked", "overlay"}},
		{"empty commit renders nothing", map[string]string{}, nil},
	}
	r := &countingRenderer{}
	c, _ := newTestCache(t, r)
	keys := map[string]string{}
	for i, s := range steps {
		if i > 0 {
			repo.Commit(s.name, s.files)
		}
		var rendered []string
		for _, path := range []string{"apps/web", "linked", "overlay"} {
			before := r.calls.Load()
			src := git.Source{URL: srv.URL + "/app", Ref: git.Ref{Branch: "main"}, Path: path, Auth: auth}
			a, err := c.Get(t.Context(), src)
			if err != nil {
				t.Fatalf("%s: Get %s: %v", s.name, path, err)
			}
			if a.Revision.Commit != repo.Head() {
				t.Errorf("%s: Get %s at %s, want %s", s.name, path, a.Revision.Commit, repo.Head())
			}
			if r.calls.Load() != before {
				rendered = append(rendered, path)
			} else if keys[path] != a.ContentKey {
				t.Errorf("%s: %s reused a render under a different content key %q (was %q)", s.name, path, a.ContentKey, keys[path])
			}
			keys[path] = a.ContentKey
		}
		if diff := cmp.Diff(s.want, rendered); diff != "" {
			t.Errorf("%s: rendered paths (-want +got):\n%s", s.name, diff)
		}
	}
}

func TestCacheUnchangedHeadCostsNoFetch(t *testing.T) {
	root := t.TempDir()
	srv, auth := serveGit(t, root, "", "")
	repo := gittest.NewRepo(t, filepath.Join(root, "app"))
	repo.Commit("init", map[string]string{"deploy/cm.yaml": "a: 1\n"})
	r := &countingRenderer{}
	c, _ := newTestCache(t, r)
	src := git.Source{URL: srv.URL + "/app", Ref: git.Ref{Branch: "main"}, Path: "deploy", Auth: auth}
	first, err := c.Get(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	srv.ResetCounts()
	second, err := c.Get(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	got := [3]int64{srv.ListRefs.Load(), srv.UploadPack.Load(), r.calls.Load()}
	if want := [3]int64{1, 0, 1}; got != want {
		t.Errorf("second Get: [info/refs, upload-pack, renders] = %v, want %v", got, want)
	}
	// The cache keeps renders packed: each Get gets its own copy of the
	// same objects.
	if d := cmp.Diff(first.Rendered, second.Rendered); d != "" || first.Rendered == second.Rendered {
		t.Errorf("second Get did not return a copy of the cached render (-first +second):\n%s", d)
	}
}

func TestCacheConcurrentGetSharesOneFetch(t *testing.T) {
	root := t.TempDir()
	srv, auth := serveGit(t, root, "", "")
	repo := gittest.NewRepo(t, filepath.Join(root, "app"))
	repo.Commit("init", map[string]string{"deploy/cm.yaml": "a: 1\n"})
	r := &countingRenderer{started: make(chan struct{}, 16), release: make(chan struct{})}
	c, _ := newTestCache(t, r)
	src := git.Source{URL: srv.URL + "/app", Ref: git.Ref{Branch: "main"}, Path: "deploy", Auth: auth}

	const callers = 8
	var wg sync.WaitGroup
	results := make([]*Artifact, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() { results[i], errs[i] = c.Get(t.Context(), src) })
	}
	<-r.started // one render is in flight and blocked
	for srv.ListRefs.Load() < callers {
		// every caller has resolved; each is now joining the flight or waiting
		// for the repository lock. This is synchronisation, not a timing assert.
		runtimeYield()
	}
	close(r.release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
		if results[i].Rendered != results[0].Rendered {
			t.Errorf("caller %d got a different render", i)
		}
	}
	if got := [2]int64{srv.UploadPack.Load(), r.calls.Load()}; got != [2]int64{1, 1} {
		t.Errorf("[upload-pack requests, renders] = %v, want [1 1]", got)
	}
}

func TestCacheFailedRenderKeepsLastGood(t *testing.T) {
	root := t.TempDir()
	repo := gittest.NewRepo(t, filepath.Join(root, "app"))
	good := repo.Commit("good", map[string]string{"deploy/cm.yaml": "a: 1\n"})
	r := &countingRenderer{}
	c, _ := newTestCache(t, r)
	src := git.Source{URL: repo.Dir, Ref: git.Ref{Branch: "main"}, Path: "deploy"}
	if _, err := c.Get(t.Context(), src); err != nil {
		t.Fatal(err)
	}
	bad := repo.Commit("bad", map[string]string{"deploy/cm.yaml": "bad\n"})
	a, err := c.Get(t.Context(), src)
	if err == nil || a != nil {
		t.Fatalf("Get of a bad render = %v, %v; want only an error", a, err)
	}
	if !strings.Contains(err.Error(), bad) {
		t.Errorf("render error %q does not name the revision", err)
	}
	last, ok := c.LastGood(src)
	if !ok || last.Revision.Commit != good {
		t.Fatalf("LastGood = %v, %v; want the good commit %s", last, ok, good)
	}
	// The bad commit is not cached as a failure either: a fix renders again.
	fixed := repo.Commit("fix", map[string]string{"deploy/cm.yaml": "a: 2\n"})
	if a, err = c.Get(t.Context(), src); err != nil || a.Revision.Commit != fixed {
		t.Fatalf("Get after fix = %v, %v", a, err)
	}
	if last, _ := c.LastGood(src); last.Revision.Commit != fixed {
		t.Errorf("LastGood after fix = %s, want %s", last.Revision.Commit, fixed)
	}
}

func TestCacheFetchErrorKeepsLastGood(t *testing.T) {
	root := t.TempDir()
	repo := gittest.NewRepo(t, filepath.Join(root, "app"))
	repo.Git("checkout", "-q", "-b", "feature")
	good := repo.Commit("good", map[string]string{"deploy/cm.yaml": "a: 1\n"})
	r := &countingRenderer{}
	c, _ := newTestCache(t, r)
	src := git.Source{URL: repo.Dir, Ref: git.Ref{Branch: "feature"}, Path: "deploy"}
	if _, err := c.Get(t.Context(), src); err != nil {
		t.Fatal(err)
	}
	repo.Git("checkout", "-q", "-b", "main")
	repo.Git("branch", "-D", "feature")
	if _, err := c.Get(t.Context(), src); !errors.Is(err, git.ErrRefNotFound) {
		t.Fatalf("Get after branch delete = %v, want git.ErrRefNotFound", err)
	}
	if last, ok := c.LastGood(src); !ok || last.Revision.Commit != good {
		t.Errorf("LastGood = %v, %v; want %s", last, ok, good)
	}
}

func TestLRUBounds(t *testing.T) {
	type add struct {
		key  string
		size int64
	}
	tests := []struct {
		name       string
		maxEntries int
		maxBytes   int64
		adds       []add
		touch      string // looked up after the first two adds
		want       []string
	}{
		{"entries evict oldest", 2, 0, []add{{"a", 1}, {"b", 1}, {"c", 1}}, "", []string{"b", "c"}},
		{"get refreshes", 2, 0, []add{{"a", 1}, {"b", 1}, {"c", 1}}, "a", []string{"a", "c"}},
		{"bytes evict oldest", 10, 10, []add{{"a", 4}, {"b", 4}, {"c", 4}}, "", []string{"b", "c"}},
		{"oversized value not stored", 10, 10, []add{{"a", 4}, {"big", 11}}, "", []string{"a"}},
		{"replace updates size", 10, 10, []add{{"a", 4}, {"a", 9}, {"b", 1}}, "", []string{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newLRU[int](tc.maxEntries, tc.maxBytes)
			for i, a := range tc.adds {
				if i == 2 && tc.touch != "" {
					l.get(tc.touch)
				}
				l.add(a.key, i, a.size)
			}
			var got []string
			for _, k := range []string{"a", "b", "c", "big"} {
				if _, ok := l.get(k); ok {
					got = append(got, k)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("kept keys (-want +got):\n%s", diff)
			}
		})
	}
}

func runtimeYield() { runtime.Gosched() }

// TestCacheChecksOutOnlyWhatTheRenderReads: a self-contained path (no
// kustomization, no symlink) is checked out alone; a kustomization gets
// its own directory and the bases it names, nothing else.
func TestCacheChecksOutOnlyWhatTheRenderReads(t *testing.T) {
	root := t.TempDir()
	repo := gittest.NewRepo(t, filepath.Join(root, "app"))
	repo.Commit("init", map[string]string{
		"apps/web/cm.yaml":           "web: 1\n",
		"docs/README.md":             "hello\n",
		"base/cm.yaml":               "base: 1\n",
		"overlay/kustomization.yaml": "resources: [../base]\n",
	})
	seen := map[string][]string{}
	f := newTestFetcher(t)
	opts := DefaultCacheOptions()
	opts.Fetcher = f
	opts.Render = func(_ context.Context, dir, path string, _ render.Settings) (*render.Rendered, error) {
		for _, p := range []string{"apps/web/cm.yaml", "docs/README.md", "base/cm.yaml"} {
			if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
				seen[path] = append(seen[path], p)
			}
		}
		return &render.Rendered{Objects: []*unstructured.Unstructured{}, Digest: "sha256:x"}, nil
	}
	c, err := NewCache(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"apps/web", "overlay"} {
		if _, err := c.Get(t.Context(), git.Source{URL: "file://" + repo.Dir, Ref: git.Ref{Branch: "main"}, Path: path}); err != nil {
			t.Fatalf("Get %s: %v", path, err)
		}
	}
	want := map[string][]string{
		"apps/web": {"apps/web/cm.yaml"},
		"overlay":  {"base/cm.yaml"},
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("files present at render (-want +got):\n%s", diff)
	}
}

// TestCacheRendersPlainTreesFromMemory: with RenderTree set, a plain path
// is rendered from its Git tree in memory, with nothing checked out; a
// kustomize path, a path holding a symlink, and a plain path RenderTree
// declines (render.ErrNeedsEngine, as for post-render changes) are checked
// out and given to Render. Checked by dropping the tree branch in
// Cache.render: apps/web then reaches Render.
func TestCacheRendersPlainTreesFromMemory(t *testing.T) {
	root := t.TempDir()
	repo := gittest.NewRepo(t, filepath.Join(root, "app"))
	repo.Commit("init", map[string]string{
		"apps/web/cm.yaml":           "web: 1\n",
		"apps/web/sub/sa.yaml":       "sa: 1\n",
		"apps/api/cm.yaml":           "api: 1\n",
		"base/cm.yaml":               "base: 1\n",
		"overlay/kustomization.yaml": "resources: [../base]\n",
		"linked/cm.yaml":             "linked: 1\n",
	})
	if err := os.Symlink("../base/cm.yaml", filepath.Join(repo.Dir, "linked/base.yaml")); err != nil {
		t.Fatal(err)
	}
	repo.Commit("symlink", nil)
	var mu sync.Mutex
	byTree, byCheckout := map[string][]string{}, map[string]bool{}
	f := newTestFetcher(t)
	opts := DefaultCacheOptions()
	opts.Fetcher = f
	opts.Render = func(_ context.Context, dir, path string, _ render.Settings) (*render.Rendered, error) {
		mu.Lock()
		defer mu.Unlock()
		byCheckout[path] = true
		return &render.Rendered{Objects: []*unstructured.Unstructured{}, Digest: "sha256:x"}, nil
	}
	opts.RenderTree = func(_ context.Context, fsys fs.FS, path string, _ render.Settings) (*render.Rendered, error) {
		if path == "apps/api" {
			return nil, render.ErrNeedsEngine
		}
		mu.Lock()
		defer mu.Unlock()
		err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := fs.ReadFile(fsys, p)
				byTree[path] = append(byTree[path], p+"="+strings.TrimSpace(string(b)))
			}
			return err
		})
		return &render.Rendered{Objects: []*unstructured.Unstructured{}, Digest: "sha256:y"}, err
	}
	c, err := NewCache(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"apps/web", "apps/api", "overlay", "linked"} {
		if _, err := c.Get(t.Context(), git.Source{URL: "file://" + repo.Dir, Ref: git.Ref{Branch: "main"}, Path: path}); err != nil {
			t.Fatalf("Get %s: %v", path, err)
		}
	}
	if diff := cmp.Diff(map[string][]string{"apps/web": {"apps/web/cm.yaml=web: 1", "apps/web/sub/sa.yaml=sa: 1"}}, byTree); diff != "" {
		t.Errorf("rendered from memory, with the files each saw (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"apps/api": true, "overlay": true, "linked": true}, byCheckout); diff != "" {
		t.Errorf("rendered from a checkout (-want +got):\n%s", diff)
	}
}
