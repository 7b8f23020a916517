package source

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/source/chartrepo"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/render"
)

// fakeDeps is a DependencyResolver of pure logic: every chart needs one
// dependency, resolved to the digest in digest, and refused to callers
// without credentials when locked is set.
type fakeDeps struct {
	needs   atomic.Int64 // Needs calls
	digest  atomic.Value // string
	private atomic.Bool
}

var errNoCredentials = errors.New("no credentials")

func (f *fakeDeps) Needs(context.Context, string, string) ([]helm.Need, error) {
	f.needs.Add(1)
	return []helm.Need{{Name: "dep", Repository: "https://charts.example.com", Version: "1.0.0", Locked: true}}, nil
}

func (f *fakeDeps) Resolve(_ context.Context, _ []helm.Need, s render.Settings) (render.Settings, error) {
	if f.private.Load() && len(s.Charts.Repositories) == 0 {
		return s, errNoCredentials
	}
	h := helm.DefaultOptions()
	if s.Helm != nil {
		h = *s.Helm
	}
	h.Dependencies = []helm.Archive{{Name: "dep", Version: "1.0.0", Digest: f.digest.Load().(string), File: "/nonexistent"}}
	s.Helm = &h
	return s, nil
}

// TestCacheKeysByDependencies: a chart's render is keyed by what its
// dependencies resolved to: the same digest reuses the render (its needs
// read once per content), another digest renders again; a caller whose
// resolution fails (no credentials) gets the error, never the render
// another caller's credentials made.
//
// Checked by leaving the dependencies out of helm.Options.Digest (the
// third Get then reuses the render of the first digest) and by returning a
// cached render before resolving (the anonymous Get then succeeds).
func TestCacheKeysByDependencies(t *testing.T) {
	root := t.TempDir()
	srv, auth := serveGit(t, root, "", "")
	repo := gittest.NewRepo(t, filepath.Join(root, "app"))
	repo.Commit("init", map[string]string{"chart/Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\n"})
	r := &countingRenderer{}
	deps := &fakeDeps{}
	deps.digest.Store("sha256:aaa")
	f := newTestFetcher(t)
	opts := DefaultCacheOptions()
	opts.Fetcher, opts.Render, opts.Dependencies = f, r.render, deps
	c, err := NewCache(opts)
	if err != nil {
		t.Fatal(err)
	}
	src := git.Source{URL: srv.URL + "/app", Ref: git.Ref{Branch: "main"}, Path: "chart", Auth: auth}
	rev := mustResolve(t, c, src)
	creds := render.Settings{Charts: chartrepo.Access{Repositories: []chartrepo.Repository{{URL: "https://charts.example.com", Username: "u", Password: "p"}}}}
	get := func(s render.Settings) string {
		t.Helper()
		before := r.calls.Load()
		if _, err := c.GetRevisionWith(t.Context(), src, rev, s); err != nil {
			return "error: " + err.Error()
		}
		return yesNo(r.calls.Load() != before)
	}
	var got []string
	got = append(got, get(creds), get(creds))
	deps.digest.Store("sha256:bbb")
	got = append(got, get(creds))
	deps.private.Store(true)
	got = append(got, get(render.Settings{}), get(creds))
	want := []string{"rendered", "cached", "rendered", "error: " + errNoCredentials.Error(), "cached"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("renders (-want +got):\n%s", diff)
	}
	if n := deps.needs.Load(); n != 1 {
		t.Errorf("Needs read %d times, want once for the one content", n)
	}
}
