package source

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"

	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/render"
)

// BenchmarkRenderPlainPath: one render of a plain path of 100 ConfigMap
// files (the agent-scale benchmark's repository), from a checkout (written,
// rendered, removed) and from its tree read into memory. Run with:
//
//	go test ./source -run '^$' -bench BenchmarkRenderPlainPath -benchtime 200x
func BenchmarkRenderPlainPath(b *testing.B) {
	repo := gittest.NewRepo(b, filepath.Join(b.TempDir(), "app"))
	files := map[string]string{}
	for i := range 100 {
		files[fmt.Sprintf("deploy/cm-%03d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%03d\ndata:\n  payload: %0512d\n", i, i)
	}
	repo.Commit("init", files)
	f := newTestFetcher(b)
	src := git.Source{URL: "file://" + repo.Dir, Ref: git.Ref{Branch: "main"}, Path: "deploy"}
	rev, err := f.Resolve(b.Context(), src)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.Fetch(b.Context(), src, rev); err != nil {
		b.Fatal(err)
	}
	in, err := f.Inputs(src, rev.Commit)
	if err != nil {
		b.Fatal(err)
	}
	opts := DefaultCacheOptions()
	opts.Fetcher = f
	opts.Render = func(ctx context.Context, root, path string, s render.Settings) (*render.Rendered, error) {
		o := render.DefaultOptions()
		o.Settings = s
		return render.Render(ctx, root, path, o)
	}
	tree := opts
	tree.RenderTree = func(ctx context.Context, fsys fs.FS, path string, s render.Settings) (*render.Rendered, error) {
		o := render.DefaultOptions()
		o.Settings = s
		return render.RenderFS(ctx, fsys, path, o)
	}
	for _, tc := range []struct {
		name string
		opts CacheOptions
	}{{"checkout", opts}, {"memory", tree}} {
		b.Run(tc.name, func(b *testing.B) {
			c, err := NewCache(tc.opts)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				r, err := c.render(context.Background(), src, rev, "deploy", in, "", render.Settings{})
				if err != nil || len(r.Objects) != 100 {
					b.Fatalf("%v, %v", r, err)
				}
			}
		})
	}
}
