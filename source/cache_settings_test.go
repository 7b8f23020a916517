package source

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/ignore"
	"gitsync.dev/gitsync/source/postrender"
	"gitsync.dev/gitsync/source/render"
)

// TestCacheKeysBySettings: a chart path is rendered again for other Helm
// settings, a plain path is shared whatever the Helm settings, ignore rules
// always count, post-render changes count for every path (none keeps
// the shared key), and a change to a .gitsyncignore above a path re-renders it.
//
// Checked by dropping the Helm key from renderKey (the second chart Get then
// reuses the first render), the ignore key from pathKey, the post-render key from pathKey (the
// changed patch reuses the first patched render), and the
// noIgnoreFileAbove check from ContentKey (the last step then renders nothing).
func TestCacheKeysBySettings(t *testing.T) {
	root := t.TempDir()
	srv, auth := serveGit(t, root, "", "")
	repo := gittest.NewRepo(t, filepath.Join(root, "app"))
	repo.Commit("init", map[string]string{
		"chart/Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"apps/web/cm.yaml": "web: 1\n",
		"docs/README.md":   "hello\n",
	})
	r := &countingRenderer{}
	c, _ := newTestCache(t, r)
	relA, relB := helm.Options{ReleaseName: "a"}, helm.Options{ReleaseName: "b"}
	patchA := postrender.Options{Labels: map[string]string{"team": "a"}}
	patchB := postrender.Options{Labels: map[string]string{"team": "b"}}
	get := func(path string, s render.Settings) bool {
		t.Helper()
		before := r.calls.Load()
		src := git.Source{URL: srv.URL + "/app", Ref: git.Ref{Branch: "main"}, Path: path, Auth: auth}
		if _, err := c.GetRevisionWith(t.Context(), src, mustResolve(t, c, src), s); err != nil {
			t.Fatalf("Get %s: %v", path, err)
		}
		return r.calls.Load() != before
	}
	steps := []struct {
		name string
		path string
		s    render.Settings
		want bool // rendered
	}{
		{"chart, release a", "chart", render.Settings{Helm: &relA}, true},
		{"chart, release a again", "chart", render.Settings{Helm: &relA}, false},
		{"chart, release b", "chart", render.Settings{Helm: &relB}, true},
		{"plain, release a", "apps/web", render.Settings{Helm: &relA}, true},
		{"plain, release b shares it", "apps/web", render.Settings{Helm: &relB}, false},
		{"plain, ignore rules", "apps/web", render.Settings{Ignore: ignore.Options{Extra: "x.yaml"}}, true},
		{"plain, patched", "apps/web", render.Settings{PostRender: patchA}, true},
		{"plain, patched alike", "apps/web", render.Settings{PostRender: patchA}, false},
		{"plain, patch changed", "apps/web", render.Settings{PostRender: patchB}, true},
		{"plain, no patches shares the first", "apps/web", render.Settings{Helm: &relB}, false},
		{"chart, release a, patched", "chart", render.Settings{Helm: &relA, PostRender: patchA}, true},
	}
	var got, want []string
	for _, s := range steps {
		got = append(got, s.name+": "+yesNo(get(s.path, s.s)))
		want = append(want, s.name+": "+yesNo(s.want))
	}
	repo.Commit("ignore above", map[string]string{".gitsyncignore": "*.draft.yaml\n"})
	got = append(got, "plain after a root .gitsyncignore: "+yesNo(get("apps/web", render.Settings{})))
	want = append(want, "plain after a root .gitsyncignore: rendered")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("renders (-want +got):\n%s", diff)
	}
}

func mustResolve(t *testing.T, c *Cache, src git.Source) git.Revision {
	t.Helper()
	rev, err := c.opts.Fetcher.Resolve(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func yesNo(rendered bool) string {
	if rendered {
		return "rendered"
	}
	return "cached"
}
