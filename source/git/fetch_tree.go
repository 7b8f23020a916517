package git

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"testing/fstest"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrNotInMemory is ReadTree declining a tree it does not hold in memory:
// one with a symlink (only a checkout's os.Root confines those), or one
// larger than MaxTreeBytes. The caller checks it out instead.
var ErrNotInMemory = errors.New("tree not read into memory")

// MaxTreeBytes bounds the file bytes ReadTree holds in memory for one
// render; a larger tree is checked out (written to disk) instead.
const MaxTreeBytes = 16 << 20

// ReadTree reads the files below dir (a clean repository path, "." for
// everything) of rev's commit, already fetched, into an in-memory file
// system, each at its repository path, as CheckoutTree would write them:
// ".git" entries and submodules are left out. A plain-YAML render reads it
// instead of a checkout (render.RenderFS): writing and removing a file per
// manifest was most of the agent's CPU at scale. A tree holding a symlink
// or more than MaxTreeBytes is ErrNotInMemory.
func (f *Fetcher) ReadTree(ctx context.Context, src Source, rev Revision, dir string) (fs.FS, error) {
	lr, err := f.repo(src)
	if err != nil {
		return nil, err
	}
	defer f.done(lr)
	lr.mu.Lock()
	defer lr.mu.Unlock()
	tree, err := lr.commitTree(rev)
	if err == nil && dir != "." {
		if tree, err = tree.Tree(dir); err != nil {
			err = fmt.Errorf("commit %s: %s: %w", rev.Commit, dir, err)
		}
	}
	if err != nil {
		return nil, gitErr(src, "read tree", err)
	}
	r := &treeReader{ctx: ctx, files: fstest.MapFS{}, limit: min(f.opts.MaxCheckoutBytes, MaxTreeBytes)}
	if r.limit <= 0 {
		r.limit = MaxTreeBytes
	}
	if dir != "." {
		r.files[dir] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
	}
	if err := r.read(tree, dir); err != nil {
		if errors.Is(err, ErrNotInMemory) {
			return nil, err
		}
		return nil, gitErr(src, "read tree", fmt.Errorf("commit %s: %w", rev.Commit, err))
	}
	return r.files, nil
}

// treeReader reads a Git tree into an fstest.MapFS.
type treeReader struct {
	ctx   context.Context
	files fstest.MapFS
	limit int64
	bytes int64
	n     int
}

func (r *treeReader) read(tree *object.Tree, dir string) error {
	for _, e := range tree.Entries {
		if skippedEntry(e.Name) {
			continue
		}
		name := path.Join(dir, e.Name)
		switch e.Mode {
		case filemode.Dir:
			sub, err := tree.Tree(e.Name)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			r.files[name] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
			if err := r.read(sub, name); err != nil {
				return err
			}
		case filemode.Regular, filemode.Deprecated, filemode.Executable:
			if err := r.readFile(tree, e, name); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		case filemode.Symlink:
			return fmt.Errorf("%s is a symlink: %w", name, ErrNotInMemory)
		}
	}
	return nil
}

func (r *treeReader) readFile(tree *object.Tree, e object.TreeEntry, name string) error {
	if r.n++; r.n%256 == 0 {
		if err := r.ctx.Err(); err != nil {
			return err
		}
	}
	blob, err := tree.TreeEntryFile(&e)
	if err != nil {
		return err
	}
	if r.bytes += blob.Size; r.bytes > r.limit {
		return fmt.Errorf("more than %d bytes: %w", r.limit, ErrNotInMemory)
	}
	rd, err := blob.Reader()
	if err != nil {
		return err
	}
	defer rd.Close()
	data, err := io.ReadAll(io.LimitReader(rd, blob.Size+1))
	if err != nil {
		return err
	}
	if int64(len(data)) != blob.Size {
		return fmt.Errorf("blob %s: read %d bytes, want %d", blob.Hash, len(data), blob.Size)
	}
	mode := fs.FileMode(0o644)
	if e.Mode == filemode.Executable {
		mode = 0o755
	}
	r.files[name] = &fstest.MapFile{Data: data, Mode: mode}
	return nil
}
