package git

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// errCheckoutTooLarge: the commit's files exceed Options.MaxCheckoutBytes.
var errCheckoutTooLarge = errors.New("checkout too large")

// Checkout fetches rev if needed and writes the files of its commit into a
// new directory under Options.Dir, returning that directory. The
// caller owns it and removes it when done. Files are written through an
// os.Root, so no tree entry (a symlink followed by a same-named directory,
// "..", an absolute name) can write outside the directory; symlinks are
// written as symlinks and left for the renderer to confine. Submodules are
// skipped and ".git" entries are never written.
func (f *Fetcher) Checkout(ctx context.Context, src Source, rev Revision) (string, error) {
	if _, err := f.Fetch(ctx, src, rev); err != nil {
		return "", err
	}
	return f.CheckoutTree(ctx, src, rev, ".")
}

// CheckoutTree writes the files of rev's commit (already fetched) below
// only, a clean repository path ("." for everything), at their place in the
// repository. A path whose rendering cannot read outside itself (see
// selfContained) needs only its own files: at scale most of a checkout's
// cost is writing files nobody reads.
func (f *Fetcher) CheckoutTree(ctx context.Context, src Source, rev Revision, only string) (string, error) {
	return f.CheckoutTrees(ctx, src, rev, []string{only})
}

// CheckoutTrees is CheckoutTree of several directories (clean repository
// paths, as Inputs.Dirs): a kustomize overlay and the bases it names, and
// nothing else of a monorepo. Options.MaxCheckoutBytes counts them together.
func (f *Fetcher) CheckoutTrees(ctx context.Context, src Source, rev Revision, dirs []string) (string, error) {
	lr, err := f.repo(src)
	if err != nil {
		return "", err
	}
	defer f.done(lr)
	lr.mu.Lock()
	defer lr.mu.Unlock()
	tree, err := lr.commitTree(rev)
	if err != nil {
		return "", gitErr(src, "checkout", err)
	}
	dir, err := os.MkdirTemp(filepath.Join(f.opts.Dir, "work"), rev.Commit[:12]+"-*")
	if err != nil {
		return "", gitErr(src, "checkout", err)
	}
	root, err := os.OpenRoot(dir)
	if err == nil {
		w := &treeWriter{ctx: ctx, root: root, limit: f.opts.MaxCheckoutBytes}
		for _, only := range dirs {
			if err = w.writeAt(tree, only); err != nil {
				break
			}
		}
		root.Close()
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", gitErr(src, "checkout", fmt.Errorf("commit %s: %w", rev.Commit, err))
	}
	return dir, nil
}

// writeAt writes the directory only of tree (the commit's root) at its
// place.
func (w *treeWriter) writeAt(tree *object.Tree, only string) error {
	if only != "." {
		var err error
		if tree, err = tree.Tree(only); err != nil {
			return err
		}
	}
	if err := w.root.MkdirAll(only, 0o755); err != nil {
		return err
	}
	return w.write(tree, only)
}

// commitTree returns the root tree of rev's commit, which lr holds (the
// caller has lr locked).
func (lr *localRepo) commitTree(rev Revision) (*object.Tree, error) {
	want, err := revisionHash(rev)
	if err != nil {
		return nil, err
	}
	commit, err := lr.repo.CommitObject(want)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", rev.Commit, err)
	}
	return commit.Tree()
}

// skippedEntry reports whether a tree entry is never written out or read
// into memory: ".git" in any case, and names no directory can hold.
func skippedEntry(name string) bool {
	return strings.EqualFold(name, ".git") || name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`)
}

// treeWriter writes a Git tree below an os.Root.
type treeWriter struct {
	ctx     context.Context
	root    *os.Root
	limit   int64
	written int64
	files   int
}

func (w *treeWriter) write(tree *object.Tree, dir string) error {
	for _, e := range tree.Entries {
		if skippedEntry(e.Name) {
			continue
		}
		name := path.Join(dir, e.Name)
		var err error
		switch e.Mode {
		case filemode.Dir:
			err = w.writeDir(tree, e, name)
		case filemode.Regular, filemode.Deprecated, filemode.Executable:
			err = w.writeFile(tree, e, name)
		case filemode.Symlink:
			err = w.writeSymlink(tree, e, name)
		default: // submodules and unknown modes
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

func (w *treeWriter) writeDir(parent *object.Tree, e object.TreeEntry, name string) error {
	sub, err := parent.Tree(e.Name)
	if err != nil {
		return err
	}
	if err := w.root.Mkdir(name, 0o755); err != nil {
		return err
	}
	return w.write(sub, name)
}

func (w *treeWriter) writeFile(parent *object.Tree, e object.TreeEntry, name string) error {
	if w.files++; w.files%256 == 0 {
		if err := w.ctx.Err(); err != nil {
			return err
		}
	}
	blob, err := parent.TreeEntryFile(&e)
	if err != nil {
		return err
	}
	if err := w.charge(blob.Size); err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	if e.Mode == filemode.Executable {
		perm = 0o755
	}
	r, err := blob.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	out, err := w.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, r)
	return errors.Join(err, out.Close())
}

func (w *treeWriter) writeSymlink(parent *object.Tree, e object.TreeEntry, name string) error {
	blob, err := parent.TreeEntryFile(&e)
	if err != nil {
		return err
	}
	if blob.Size > 4096 {
		return errors.New("symlink target too long")
	}
	target, err := blob.Contents()
	if err != nil {
		return err
	}
	if err := w.charge(blob.Size); err != nil {
		return err
	}
	return w.root.Symlink(target, name)
}

func (w *treeWriter) charge(n int64) error {
	w.written += n
	if w.limit > 0 && w.written > w.limit {
		return fmt.Errorf("more than %d bytes: %w", w.limit, errCheckoutTooLarge)
	}
	return nil
}
