package render

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"

	"gitsync.dev/gitsync/source/ignore"
)

// ignoreRulesAbove starts the rules of a plain render of rel: the defaults
// and the source's own rules (opts.Settings.Ignore), then the .gitsyncignore
// files of the repository root and of every directory between it and rel,
// outermost first. rel's own file is read by the walk.
func ignoreRulesAbove(ctx context.Context, repo *repoRoot, rel string, opts Options) (*ignore.Rules, error) {
	rules := ignore.New(opts.Settings.Ignore)
	var dirs []string
	for d := filepath.Dir(rel); ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == "." {
			break
		}
	}
	if rel == "." {
		dirs = nil
	}
	var err error
	for i := len(dirs) - 1; i >= 0; i-- {
		if rules, err = withIgnoreFile(ctx, repo, dirs[i], rules); err != nil {
			return nil, err
		}
	}
	return rules, nil
}

// withIgnoreFile adds dir's .gitsyncignore, if it has one, to rules.
func withIgnoreFile(ctx context.Context, repo *repoRoot, dir string, rules *ignore.Rules) (*ignore.Rules, error) {
	name := filepath.Join(dir, ignore.FileName)
	fi, err := repo.files.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return rules, nil
	}
	if err != nil {
		return nil, repo.classify(name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, renderErr(errInvalidObject, filepath.ToSlash(name), "not a regular file")
	}
	data, err := repo.readFile(ctx, name)
	if err != nil {
		return nil, err
	}
	return rules.With(filepath.ToSlash(dir), data), nil
}
