package render

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// memTree reads the directory dir (no symlinks) into an in-memory FS, as
// the fetcher reads a Git tree.
func memTree(t *testing.T, dir string) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			t.Fatalf("%s is a symlink; RenderFS takes trees without", rel)
		case d.IsDir():
			m[filepath.ToSlash(rel)] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m[filepath.ToSlash(rel)] = &fstest.MapFile{Data: data, Mode: 0o644}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRenderFSIsRender: RenderFS of a tree in memory gives what Render of
// the same files in a checkout gives: the same objects and digest, or the
// same error (class and message); paths that need kustomize are
// ErrNeedsEngine, for the caller to render from a checkout.
func TestRenderFSIsRender(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string // nil: testdata/render
		path  string
		opts  func(*Options)
		fails bool // Render refuses it
	}{
		{name: "plain directory", path: "plain"},
		{name: "Lists", path: "lists"},
		{name: "CRD and CR", path: "crd"},
		{name: "single file", path: "crd/widget.yaml"},
		{name: "kustomize overlay", path: "kustomize/overlays/prod"},
		{name: "kustomization below a plain directory", path: "nested"},
		{name: "not found", path: "nope", fails: true},
		{name: "invalid YAML", files: map[string]string{"deploy/a.yaml": "a: [b\n"}, path: "deploy", fails: true},
		{name: "duplicate object", files: map[string]string{"deploy/a.yaml": configMap("a"), "deploy/b.yaml": configMap("a")}, path: "deploy", fails: true},
		{name: "not a manifest file", files: map[string]string{"deploy/a.txt": "x"}, path: "deploy/a.txt", fails: true},
		{
			name:  "ignore file inside the path",
			files: map[string]string{"deploy/.gitsyncignore": "skip/\n", "deploy/a.yaml": configMap("a"), "deploy/skip/b.yaml": "not: [yaml"},
			path:  "deploy",
		},
		{
			name:  "file over the size cap",
			files: map[string]string{"deploy/a.yaml": configMap("a") + strings.Repeat("# pad\n", 100)},
			path:  "deploy", opts: func(o *Options) { o.MaxFileBytes = 200 }, fails: true,
		},
		{
			name:  "too many files",
			files: map[string]string{"deploy/a.yaml": configMap("a"), "deploy/b.yaml": configMap("b"), "deploy/c.yaml": configMap("c")},
			path:  "deploy", opts: func(o *Options) { o.MaxFiles = 2 }, fails: true,
		},
		{
			name:  "too many objects",
			files: map[string]string{"deploy/a.yaml": configMap("a") + "---\n" + configMap("b")},
			path:  "deploy", opts: func(o *Options) { o.MaxObjects = 1 }, fails: true,
		},
		{name: "alias bomb", files: map[string]string{"deploy/a.yaml": aliasBomb(9)}, path: "deploy", fails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := "testdata/render"
			if tt.files != nil {
				root = t.TempDir()
				writeTree(t, root, tt.files)
			}
			opts := DefaultOptions()
			if tt.opts != nil {
				tt.opts(&opts)
			}
			want, wantErr := Render(context.Background(), root, tt.path, opts)
			got, err := RenderFS(context.Background(), memTree(t, root), tt.path, opts)
			if strings.HasPrefix(tt.path, "kustomize") || tt.path == "nested" {
				if !errors.Is(err, ErrNeedsEngine) || got != nil {
					t.Fatalf("RenderFS = %v, %v; want ErrNeedsEngine", got, err)
				}
				return
			}
			if (wantErr != nil) != tt.fails {
				t.Fatalf("Render error %v; want one: %v", wantErr, tt.fails)
			}
			if (wantErr == nil) != (err == nil) || (err != nil && err.Error() != wantErr.Error()) {
				t.Fatalf("RenderFS error %v, Render error %v", err, wantErr)
			}
			if wantErr != nil {
				var we, ge *Error
				if !errors.As(wantErr, &we) || !errors.As(err, &ge) || we.Class != ge.Class {
					t.Errorf("error classes differ: Render %v, RenderFS %v", wantErr, err)
				}
				return
			}
			if diff := cmp.Diff(want.Objects, got.Objects); diff != "" {
				t.Errorf("objects (-Render +RenderFS):\n%s", diff)
			}
			if want.Digest != got.Digest {
				t.Errorf("digest %s, Render's %s", got.Digest, want.Digest)
			}
		})
	}
}
