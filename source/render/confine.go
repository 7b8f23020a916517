package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// repoRoot confines every read of one render to a repository checkout and
// charges it against the render's caps. Reads go through os.Root, which
// refuses any path or symlink that leaves the directory even if the tree
// changes between check and use; the explicit checks before it exist to give
// a clear error class and message.
//
// A render of plain YAML may instead read an fs.FS holding one Git tree in
// memory (RenderFS): then dir is empty, root is nil (kustomize and Helm,
// which use them, only ever run over a checkout) and files reads the FS.
type repoRoot struct {
	// dir is the absolute, symlink-free path of the checkout.
	dir  string
	root *os.Root
	// files is what every confined read goes through: root, or the FS.
	files  files
	budget *readBudget
	// sops keeps the SOPS files read (render_sops.go).
	sops sopsFiles
}

// files are the reads a render makes of its repository: an os.Root over a
// checkout (rootFiles) or an fs.FS without symlinks (fsFiles). Names are
// relative, OS-separated and clean, as localPath returns them.
type files interface {
	Stat(name string) (fs.FileInfo, error)
	Lstat(name string) (fs.FileInfo, error)
	Open(name string) (fs.File, error)
	// EvalSymlinks is filepath.EvalSymlinks of name below the root, as a
	// path relative to it.
	EvalSymlinks(name string) (string, error)
}

// rootFiles are the files of a checkout directory, through its os.Root.
type rootFiles struct {
	root *os.Root
	dir  string
}

func (f rootFiles) Stat(name string) (fs.FileInfo, error)  { return f.root.Stat(name) }
func (f rootFiles) Lstat(name string) (fs.FileInfo, error) { return f.root.Lstat(name) }
func (f rootFiles) Open(name string) (fs.File, error)      { return f.root.Open(name) }

func (f rootFiles) EvalSymlinks(name string) (string, error) {
	real, err := filepath.EvalSymlinks(filepath.Join(f.dir, name))
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(f.dir, real)
	if err != nil || (rel != "." && !filepath.IsLocal(rel)) {
		return "", errLeavesRoot
	}
	return rel, nil
}

// errLeavesRoot: a path resolves outside the root.
var errLeavesRoot = errors.New("path escapes from parent")

// fsFiles are the files of an fs.FS that holds no symlinks (a Git tree
// read into memory, which refuses trees that have any): Lstat is Stat and
// every path is its own real path.
type fsFiles struct{ fsys fs.FS }

func (f fsFiles) Stat(name string) (fs.FileInfo, error) {
	return fs.Stat(f.fsys, filepath.ToSlash(name))
}
func (f fsFiles) Lstat(name string) (fs.FileInfo, error) { return f.Stat(name) }
func (f fsFiles) Open(name string) (fs.File, error)      { return f.fsys.Open(filepath.ToSlash(name)) }

func (f fsFiles) EvalSymlinks(name string) (string, error) {
	if _, err := f.Stat(name); err != nil {
		return "", err
	}
	return name, nil
}

// openRepoRoot opens dir as the confinement root of one render.
func openRepoRoot(dir string, opts Options) (*repoRoot, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, renderErr(errNotFound, ".", "repository root: %v", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, &Error{Class: errNotFound, Path: ".", Detail: "repository root not found", Err: unwrapPathError(err)}
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, &Error{Class: errNotFound, Path: ".", Detail: "repository root not readable", Err: unwrapPathError(err)}
	}
	return &repoRoot{dir: real, root: root, files: rootFiles{root: root, dir: real}, budget: newReadBudget(opts)}, nil
}

// fsRepoRoot is the confinement root of a render of fsys.
func fsRepoRoot(fsys fs.FS, opts Options) *repoRoot {
	return &repoRoot{files: fsFiles{fsys: fsys}, budget: newReadBudget(opts)}
}

// Close releases the root directory handle, if any.
func (r *repoRoot) Close() error {
	if r.root == nil {
		return nil
	}
	return r.root.Close()
}

// localPath cleans a slash- or OS-separated path relative to the root and
// refuses absolute paths and any "..". The result uses OS separators, "." for
// the root itself.
func localPath(rel string) (string, error) {
	rel = filepath.FromSlash(rel)
	if rel == "" {
		return ".", nil
	}
	if filepath.IsAbs(rel) {
		return "", renderErr(ErrOutsideRoot, filepath.ToSlash(rel), "path must be relative to the repository root")
	}
	if !filepath.IsLocal(rel) {
		if filepath.Clean(rel) == "." {
			return ".", nil
		}
		return "", renderErr(ErrOutsideRoot, filepath.ToSlash(rel), "path leaves the repository root")
	}
	return filepath.Clean(rel), nil
}

// relOf maps an absolute path to one relative to the root, or fails with
// ErrOutsideRoot. It does not resolve symlinks; see resolve for that.
func (r *repoRoot) relOf(abs string) (string, error) {
	if !filepath.IsAbs(abs) {
		return localPath(abs)
	}
	rel, err := filepath.Rel(r.dir, filepath.Clean(abs))
	if err != nil || (rel != "." && !filepath.IsLocal(rel)) {
		return "", renderErr(ErrOutsideRoot, filepath.ToSlash(abs), "path leaves the repository root")
	}
	return rel, nil
}

// resolve follows every symlink in rel and returns the real path relative to
// the root, failing with ErrOutsideRoot if it lands outside and errNotFound if
// it does not exist.
func (r *repoRoot) resolve(rel string) (string, error) {
	real, err := r.files.EvalSymlinks(rel)
	switch {
	case errors.Is(err, errLeavesRoot):
		return "", renderErr(ErrOutsideRoot, filepath.ToSlash(rel), "resolves outside the repository root")
	case errors.Is(err, fs.ErrNotExist):
		return "", &Error{Class: errNotFound, Path: filepath.ToSlash(rel), Detail: "not found"}
	case err != nil:
		return "", &Error{Class: errNotFound, Path: filepath.ToSlash(rel), Detail: "cannot resolve", Err: unwrapPathError(err)}
	}
	return real, nil
}

// stat returns the FileInfo of rel (following symlinks inside the root).
func (r *repoRoot) stat(rel string) (fs.FileInfo, error) {
	fi, err := r.files.Stat(rel)
	if err != nil {
		return nil, r.classify(rel, err)
	}
	return fi, nil
}

// readDir lists rel's entries sorted by name.
func (r *repoRoot) readDir(rel string) ([]fs.DirEntry, error) {
	f, err := r.files.Open(rel)
	if err != nil {
		return nil, r.classify(rel, err)
	}
	defer f.Close()
	dir, ok := f.(fs.ReadDirFile)
	if !ok {
		return nil, renderErr(errNotFound, filepath.ToSlash(rel), "not a directory")
	}
	entries, err := dir.ReadDir(-1)
	if err != nil {
		return nil, r.classify(rel, err)
	}
	// ReadDir on an *os.File is unsorted; sort for a deterministic walk.
	sortEntries(entries)
	return entries, nil
}

// readFile reads rel after refusing it, from its stat alone, if it is larger
// than the per-file cap or would exceed the total or file-count caps.
func (r *repoRoot) readFile(ctx context.Context, rel string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Stat first: opening a FIFO or device could block or never end.
	if fi, err := r.files.Stat(rel); err != nil {
		return nil, r.classify(rel, err)
	} else if !fi.Mode().IsRegular() {
		return nil, renderErr(errInvalidYAML, filepath.ToSlash(rel), "not a regular file")
	}
	f, err := r.files.Open(rel)
	if err != nil {
		return nil, r.classify(rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, r.classify(rel, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, renderErr(errInvalidYAML, filepath.ToSlash(rel), "not a regular file")
	}
	if err := r.budget.take(filepath.ToSlash(rel), fi.Size()); err != nil {
		return nil, err
	}
	// The file may grow after Stat; never read more than was charged.
	data, err := io.ReadAll(io.LimitReader(f, fi.Size()+1))
	if err != nil {
		return nil, r.classify(rel, err)
	}
	if int64(len(data)) > fi.Size() {
		return nil, renderErr(ErrTooLarge, filepath.ToSlash(rel), "file grew while being read")
	}
	r.sops.note(filepath.ToSlash(rel), data)
	return data, nil
}

// classify turns an os error about rel into an Error of the right class.
func (r *repoRoot) classify(rel string, err error) error {
	p := filepath.ToSlash(rel)
	switch {
	case isEscape(err):
		return renderErr(ErrOutsideRoot, p, "resolves outside the repository root")
	case errors.Is(err, fs.ErrNotExist):
		return renderErr(errNotFound, p, "not found")
	default:
		return &Error{Class: errNotFound, Path: p, Detail: "cannot read", Err: unwrapPathError(err)}
	}
}

// isEscape reports whether err is os.Root refusing a path that leaves it.
// The standard library does not export that error, only its text.
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// unwrapPathError drops the absolute path from an *fs.PathError so messages
// stay relative to the repository (and do not reveal where checkouts live).
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// readBudget enforces the caps on one render's input: single file size,
// total bytes and number of files read.
type readBudget struct {
	mu    sync.Mutex
	opts  Options
	files int
	total int64
}

func newReadBudget(opts Options) *readBudget { return &readBudget{opts: opts} }

// take charges one file of the given size, refusing it if any cap is exceeded.
func (b *readBudget) take(path string, size int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if size > b.opts.MaxFileBytes {
		return renderErr(ErrTooLarge, path, "file is %d bytes, over the %d-byte limit", size, b.opts.MaxFileBytes)
	}
	if b.files+1 > b.opts.MaxFiles {
		return renderErr(ErrTooLarge, path, "more than %d files to read", b.opts.MaxFiles)
	}
	if b.total+size > b.opts.MaxTotalBytes {
		return renderErr(ErrTooLarge, path, "input exceeds the %d-byte total limit", b.opts.MaxTotalBytes)
	}
	b.files++
	b.total += size
	return nil
}

// sortEntries orders directory entries by name, byte-wise, for a walk that is
// the same on every machine.
func sortEntries(entries []fs.DirEntry) {
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
}
