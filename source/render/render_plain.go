package render

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"gitsync.dev/gitsync/source/ignore"
)

// manifestExtensions are the file extensions read in a plain directory.
var manifestExtensions = []string{".yaml", ".yml", ".json"}

// isManifestName reports whether a file name has a manifest extension.
func isManifestName(name string) bool {
	return slices.Contains(manifestExtensions, strings.ToLower(filepath.Ext(name)))
}

// renderPlain decodes every manifest file below rel (or rel itself if it is a
// file), in byte-wise path order, skipping what the ignore rules name
// (ignore.go). A subdirectory holding a kustomization is built with
// kustomize instead of being read file by file.
func renderPlain(ctx context.Context, repo *repoRoot, rel string, opts Options) ([]decodedObject, error) {
	fi, err := repo.stat(rel)
	if err != nil {
		return nil, err
	}
	w := &plainWalker{ctx: ctx, repo: repo, opts: opts, visited: map[string]bool{}}
	if w.rules, err = ignoreRulesAbove(ctx, repo, rel, opts); err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		if !isManifestName(rel) {
			return nil, renderErr(errInvalidYAML, filepath.ToSlash(rel), "not a .yaml, .yml or .json file")
		}
		return w.out, w.decodeFile(rel)
	}
	if err := w.walkDir(rel); err != nil {
		return nil, err
	}
	return w.out, nil
}

// plainWalker walks one directory tree of a plain render.
type plainWalker struct {
	ctx  context.Context
	repo *repoRoot
	opts Options
	// visited holds real directory paths already walked, so a symlink back
	// up the tree cannot loop.
	visited map[string]bool
	// depth is how many directories deep the walk is; the top directory is
	// never a kustomization (Render sends those to kustomize itself).
	depth int
	// rules are the ignore rules of the directory being walked.
	rules *ignore.Rules
	out   []decodedObject
}

func (w *plainWalker) walkDir(rel string) error {
	if w.visited[rel] {
		return nil
	}
	w.visited[rel] = true
	if w.depth > 0 && isKustomizeDir(w.repo, rel) {
		if w.opts.PlainOnly {
			return ErrNeedsEngine
		}
		// A kustomization below a plain directory is built as a unit, as
		// `kustomize create --autodetect --recursive` and Flux would: its
		// files are inputs to it, not manifests of their own.
		objs, err := renderKustomize(w.ctx, w.repo, rel, w.opts)
		if err != nil {
			return err
		}
		w.out = append(w.out, objs...)
		return nil
	}
	if w.depth > 0 && isChartDir(w.repo, rel) {
		return renderErr(errHelm, filepath.ToSlash(rel), "Helm chart inside a plain directory; set the path to it to render it, or ignore it")
	}
	parent := w.rules
	defer func() { w.rules = parent }()
	rules, err := withIgnoreFile(w.ctx, w.repo, rel, parent)
	if err != nil {
		return err
	}
	w.rules = rules
	w.depth++
	defer func() { w.depth-- }()
	entries, err := w.repo.readDir(rel)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		name := e.Name()
		child := filepath.Join(rel, name)
		if name == ".git" || w.rules.Ignored(filepath.ToSlash(child), e.IsDir()) {
			continue // never listed or read
		}
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			err = w.visitSymlink(child)
		case e.IsDir():
			err = w.walkDir(child)
		case e.Type().IsRegular() && isManifestName(name):
			err = w.decodeFile(child)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// visitSymlink follows a symlink only if it stays inside the repository; one
// that leads out is an error even if it would not be read, because it means
// the tree is not what it seems.
func (w *plainWalker) visitSymlink(link string) error {
	real, err := w.repo.resolve(link)
	if err != nil {
		if errors.Is(err, errNotFound) && !isManifestName(link) {
			return nil // a dangling link to something we would not read anyway
		}
		return err
	}
	fi, err := w.repo.stat(real)
	if err != nil {
		return err
	}
	switch {
	case fi.IsDir():
		return w.walkDir(real)
	case fi.Mode().IsRegular() && isManifestName(link):
		return w.decodeFile(link)
	}
	return nil
}

// decodeFile reads one manifest file and appends its objects.
func (w *plainWalker) decodeFile(rel string) error {
	if slices.Contains(kustomizationFileNames, filepath.Base(rel)) {
		return renderErr(errInvalidObject, filepath.ToSlash(rel),
			"kustomization inside a plain directory; set the path to its directory to render it with kustomize")
	}
	data, err := w.repo.readFile(w.ctx, rel)
	if err != nil {
		return err
	}
	objs, err := decodeManifest(filepath.ToSlash(rel), data, w.opts)
	if err != nil {
		return err
	}
	w.out = append(w.out, objs...)
	return nil
}
