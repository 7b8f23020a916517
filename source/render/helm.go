package render

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
	fi, err := f.repo.root.Stat(rel)
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
