package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/helm"
)

// renderHelm renders the chart at rel with the source's Helm settings (the
// chart's defaults when there are none) and decodes what it yields like any
// manifest file, so the object cap, YAML limits and Secret redaction apply.
func renderHelm(ctx context.Context, repo *repoRoot, rel string, opts Options) ([]decodedObject, error) {
	hopts := helm.DefaultOptions()
	if h := opts.Settings.Helm; h != nil {
		hopts = *h
	}
	hopts.Budget = opts.Budget
	ms, err := helm.Render(ctx, helmFiles{repo}, filepath.ToSlash(rel), hopts)
	if err != nil {
		return nil, helmErr(err)
	}
	// Helm charged its documents as it split them; decoding them again is
	// the same output, not charged twice.
	decode := opts
	decode.Budget = nil
	var out []decodedObject
	for _, m := range ms {
		objs, err := decodeManifest(m.Path, m.Data, decode)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// isChartDir reports whether rel is a directory holding a Chart.yaml.
func isChartDir(repo *repoRoot, rel string) bool {
	return helm.IsChart(helmFiles{repo}, filepath.ToSlash(rel))
}

// helmErr gives Helm's refusals the errHelm class; errors of the confined
// reads already have theirs (ErrOutsideRoot, ErrTooLarge, ErrNotFound).
func helmErr(err error) error {
	var he *helm.Error
	var be *budget.ExceededError
	if errors.As(err, &he) && errors.As(err, &be) {
		return &Error{Class: ErrOverBudget, Path: he.Path, Detail: he.Detail, Err: be}
	}
	if errors.As(err, &he) {
		return &Error{Class: errHelm, Path: he.Path, Detail: he.Detail, Err: he.Err}
	}
	return err
}

// helmFiles is helm.Files over the render's confined, capped reads.
type helmFiles struct{ repo *repoRoot }

var _ helm.Files = helmFiles{}

func (f helmFiles) ReadDir(dir string) ([]fs.DirEntry, error) {
	return f.repo.readDir(filepath.FromSlash(dir))
}

// Stat keeps "does not exist" recognisable (helm asks about optional files)
// and classifies everything else as the other reads do.
func (f helmFiles) Stat(name string) (fs.FileInfo, error) {
	rel := filepath.FromSlash(name)
	fi, err := f.repo.files.Stat(rel)
	if errors.Is(err, fs.ErrNotExist) && !isEscape(err) {
		return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	if err != nil {
		return nil, f.repo.classify(rel, err)
	}
	return fi, nil
}

func (f helmFiles) ReadFile(ctx context.Context, name string) ([]byte, error) {
	rel, err := localPath(name)
	if err != nil {
		return nil, err
	}
	return f.repo.readFile(ctx, rel)
}

// Charge counts a member of a chart archive like a file of the repository.
func (f helmFiles) Charge(name string, size int64) error {
	return f.repo.budget.take(name, size)
}

// Archive reads a chart the agent downloaded (helm.Options.Dependencies),
// charged like a file of the repository named name: the same size cap, the
// same total. Its path is the agent's (a file of its chart cache), never
// the repository's.
func (f helmFiles) Archive(ctx context.Context, name string, a helm.Archive) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	file, err := os.Open(a.File)
	if err != nil {
		return nil, &Error{Class: errNotFound, Path: name, Detail: fmt.Sprintf("downloaded chart %s %s cannot be read", a.Name, a.Version), Err: unwrapPathError(err)}
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, &Error{Class: errNotFound, Path: name, Detail: "cannot read", Err: unwrapPathError(err)}
	}
	if err := f.repo.budget.take(name, fi.Size()); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(file, fi.Size()+1))
	if err != nil || int64(len(data)) != fi.Size() {
		return nil, &Error{Class: errNotFound, Path: name, Detail: "changed while being read", Err: err}
	}
	return data, nil
}

// ChartNeeds returns what the chart at path of root needs downloaded before
// it renders (helm.Needs), read with the render's confinement and caps; nil
// when path is not a chart. It reads small files only, so the agent calls
// it itself, before handing the render to a child.
func ChartNeeds(ctx context.Context, root, path string, opts Options) ([]helm.Need, error) {
	opts = opts.withDefaults()
	rel, err := localPath(path)
	if err != nil {
		return nil, err
	}
	repo, err := openRepoRoot(root, opts)
	if err != nil {
		return nil, err
	}
	defer repo.Close()
	if rel, err = repo.resolve(rel); err != nil {
		return nil, err
	}
	if !isChartDir(repo, rel) {
		return nil, nil
	}
	needs, err := helm.Needs(ctx, helmFiles{repo}, filepath.ToSlash(rel))
	if err != nil {
		return nil, helmErr(err)
	}
	return needs, nil
}
