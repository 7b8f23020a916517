package render

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// confinedFS is the read-only file system kustomize builds on. Every path it
// is given, absolute or relative, is mapped into the repository root and
// refused if it, or any symlink on the way, leads outside; every file read is
// charged against the render's caps and bounded for YAML aliases; every
// kustomization read is checked for remote and escaping references before
// kustomize acts on it.
type confinedFS struct {
	ctx  context.Context
	repo *repoRoot
	opts Options

	mu sync.Mutex
	// first is the first violation seen; kustomize turns the errors it gets
	// into text, so the typed error is kept here for Render to return.
	first error
	// secretEnvs are the env files of the secretGenerators seen so far, by
	// real path, checked when kustomize reads them.
	secretEnvs map[string]secretEnvFile
	// secretSources are the files read so far that may hold Secret data:
	// kustomize's message is withheld when it failed after reading one.
	secretSources []string
}

var _ filesys.FileSystem = (*confinedFS)(nil)

func newConfinedFS(ctx context.Context, repo *repoRoot, opts Options) *confinedFS {
	return &confinedFS{ctx: ctx, repo: repo, opts: opts}
}

// errReadOnly is returned by every method that would change the tree.
var errReadOnly = errors.New("repository file system is read-only")

// violation returns the first confinement, cap or remote violation seen.
func (c *confinedFS) violation() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first
}

// note keeps err if it is a violation worth reporting over kustomize's text.
func (c *confinedFS) note(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrOutsideRoot) || errors.Is(err, ErrTooLarge) || errors.Is(err, errRemoteDisabled) {
		c.keep(err)
	}
	return err
}

// keep records err as the violation to report if it is the first.
func (c *confinedFS) keep(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first == nil {
		c.first = err
	}
	return err
}

// rel maps a path kustomize gives us into the root, resolving symlinks.
func (c *confinedFS) rel(path string) (string, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(c.repo.dir, path)
	}
	lexical, err := c.repo.relOf(path)
	if err != nil {
		return "", c.note(err)
	}
	real, err := c.repo.resolve(lexical)
	return real, c.note(err)
}

func (c *confinedFS) Create(string) (filesys.File, error) { return nil, errReadOnly }
func (c *confinedFS) Mkdir(string) error                  { return errReadOnly }
func (c *confinedFS) MkdirAll(string) error               { return errReadOnly }
func (c *confinedFS) RemoveAll(string) error              { return errReadOnly }
func (c *confinedFS) WriteFile(string, []byte) error      { return errReadOnly }

// Open opens a file for reading, charged like ReadFile.
func (c *confinedFS) Open(path string) (filesys.File, error) {
	rel, err := c.rel(path)
	if err != nil {
		return nil, err
	}
	if fi, err := c.repo.stat(rel); err != nil {
		return nil, c.note(err)
	} else if !fi.IsDir() && !fi.Mode().IsRegular() {
		return nil, renderErr(errInvalidYAML, filepath.ToSlash(rel), "not a regular file")
	}
	f, err := c.repo.root.Open(rel)
	if err != nil {
		return nil, c.note(c.repo.classify(rel, err))
	}
	fi, err := f.Stat()
	if err == nil && !fi.IsDir() {
		err = c.note(c.repo.budget.take(filepath.ToSlash(rel), fi.Size()))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// IsDir is true for a directory inside the root.
func (c *confinedFS) IsDir(path string) bool {
	rel, err := c.rel(path)
	if err != nil {
		return false
	}
	fi, err := c.repo.stat(rel)
	return err == nil && fi.IsDir()
}

// Exists is true for anything inside the root.
func (c *confinedFS) Exists(path string) bool {
	rel, err := c.rel(path)
	if err != nil {
		return false
	}
	_, err = c.repo.stat(rel)
	return err == nil
}

// ReadDir lists the names in a directory, sorted.
func (c *confinedFS) ReadDir(path string) ([]string, error) {
	rel, err := c.rel(path)
	if err != nil {
		return nil, err
	}
	entries, err := c.repo.readDir(rel)
	if err != nil {
		return nil, c.note(err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

// CleanedAbs returns the symlink-free absolute directory and file name of
// path, like kustomize's on-disk version, but only inside the root.
func (c *confinedFS) CleanedAbs(path string) (filesys.ConfirmedDir, string, error) {
	rel, err := c.rel(path)
	if err != nil {
		return "", "", err
	}
	fi, err := c.repo.stat(rel)
	if err != nil {
		return "", "", c.note(err)
	}
	abs := filepath.Join(c.repo.dir, rel)
	if fi.IsDir() {
		return filesys.ConfirmedDir(abs), "", nil
	}
	return filesys.ConfirmedDir(filepath.Dir(abs)), filepath.Base(abs), nil
}

// Glob returns the matches of pattern, failing if any resolves outside the root.
func (c *confinedFS) Glob(pattern string) ([]string, error) {
	if !filepath.IsAbs(pattern) {
		pattern = filepath.Join(c.repo.dir, pattern)
	}
	if _, err := c.repo.relOf(filepath.Dir(pattern)); err != nil {
		return nil, c.note(err)
	}
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	for _, m := range matches {
		if _, err := c.rel(m); err != nil {
			return nil, err // fail closed: a match leads outside or vanished
		}
	}
	return matches, nil
}

// ReadFile reads a file inside the root within the render's caps. A
// kustomization file is checked for remote and escaping references first.
func (c *confinedFS) ReadFile(path string) ([]byte, error) {
	rel, err := c.rel(path)
	if err != nil {
		return nil, err
	}
	data, err := c.repo.readFile(c.ctx, rel)
	if err != nil {
		return nil, c.note(err)
	}
	loc := docLocation{Path: filepath.ToSlash(rel)}
	for _, doc := range splitYAMLDocuments(data) {
		if err := checkAliasExpansion(doc.Data, c.opts.MaxYAMLNodes); err != nil {
			return nil, c.note(&Error{Class: ErrTooLarge, Path: loc.Path, Line: doc.Line, Document: doc.Index,
				Detail: "YAML alias expansion too large", Err: err})
		}
	}
	if slices.Contains(kustomizationFileNames, filepath.Base(rel)) {
		envs, err := checkKustomization(c.repo, rel, data)
		if err != nil {
			return nil, c.keep(err)
		}
		c.addSecretEnvs(envs)
	}
	if err := c.noteSecretSource(rel, data); err != nil {
		return nil, c.keep(err)
	}
	return data, nil
}

// addSecretEnvs records the env files of a kustomization's secretGenerators.
func (c *confinedFS) addSecretEnvs(envs map[string]secretEnvFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.secretEnvs == nil {
		c.secretEnvs = map[string]secretEnvFile{}
	}
	maps.Copy(c.secretEnvs, envs)
}

// noteSecretSource records a file that may hold Secret data and checks it
// when it is the env file of a secretGenerator.
func (c *confinedFS) noteSecretSource(rel string, data []byte) error {
	c.mu.Lock()
	env, isEnv := c.secretEnvs[rel]
	if isEnv || mayHoldSecret(data) {
		c.secretSources = append(c.secretSources, filepath.ToSlash(rel))
	}
	c.mu.Unlock()
	if isEnv {
		return checkSecretEnv(filepath.ToSlash(rel), data, env)
	}
	return nil
}

// readSecrets returns the files read that may hold Secret data, sorted and
// without duplicates.
func (c *confinedFS) readSecrets() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.secretSources)
	slices.Sort(out)
	return slices.Compact(out)
}

// Walk walks a tree inside the root without following symlinks.
func (c *confinedFS) Walk(path string, walkFn filepath.WalkFunc) error {
	rel, err := c.rel(path)
	if err != nil {
		return err
	}
	return filepath.Walk(filepath.Join(c.repo.dir, rel), walkFn)
}

// ensure *os.File satisfies filesys.File, which Open returns.
var _ filesys.File = (*os.File)(nil)

// maxOverlayDirs bounds the kustomizations OverlayRoot reads.
const maxOverlayDirs = 256

// OverlayRoot returns the directory a render of the local directory dir
// must be confined to for kustomize's own rule to hold: the kustomization
// directories dir names by relative path (its bases and components,
// transitively) may sit outside dir, files may not. It is dir itself, or the
// nearest directory above it that holds dir and every such base. Paths are
// taken lexically: a base reached through a symlink does not widen the root,
// so the symlink is refused as leaving it, and kustomize's root-only loading
// still refuses a file outside its kustomization's directory. Remote and
// unreadable references are left for the render to report.
func OverlayRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	root := filepath.Clean(abs)
	seen := map[string]bool{}
	queue := []string{root}
	for len(queue) > 0 && len(seen) < maxOverlayDirs {
		d := queue[0]
		queue = queue[1:]
		if seen[d] {
			continue
		}
		seen[d] = true
		for _, base := range kustomizationDirs(d) {
			root = commonDir(root, base)
			queue = append(queue, base)
		}
	}
	return root, nil
}

// kustomizationDirs returns the local directories the kustomization in d
// names as resources, bases or components; none when d holds none.
func kustomizationDirs(d string) []string {
	var data []byte
	for _, name := range kustomizationFileNames {
		b, err := readSmallFile(filepath.Join(d, name))
		if err == nil {
			data = b
			break
		}
	}
	if data == nil {
		return nil
	}
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return nil
	}
	k.FixKustomization()
	var out []string
	for _, e := range append(k.Resources, k.Components...) {
		if looksRemote(e) || filepath.IsAbs(e) {
			continue
		}
		p := filepath.Join(d, filepath.FromSlash(e))
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			out = append(out, p)
		}
	}
	return out
}

// readSmallFile reads a regular file of at most DefaultOptions'
// per-file cap.
func readSmallFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > DefaultOptions().MaxFileBytes {
		return nil, errors.New("not a small regular file")
	}
	return os.ReadFile(path)
}

// commonDir is the nearest directory holding both a and b (absolute, clean).
func commonDir(a, b string) string {
	for {
		if rel, err := filepath.Rel(a, b); err == nil && (rel == "." || filepath.IsLocal(rel)) {
			return a
		}
		parent := filepath.Dir(a)
		if parent == a {
			return a
		}
		a = parent
	}
}
