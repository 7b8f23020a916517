package git

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"gitsync.dev/gitsync/source/ignore"
)

// ContentKey names the input a render of src.Path at commit depends on, so
// two commits with the same key render identically:
//   - "tree:<hash>": the tree of Path, when Path holds no symlink and no
//     kustomization (plain YAML rendering reads nothing else);
//   - "root:<hash>": the whole repository tree, when a symlink or a
//     kustomization under Path may pull in files from elsewhere in the repo;
//   - "chart:<hash>": the whole repository tree, when Path is a Helm chart
//     directory (its values files may be anywhere in the repository, and its
//     render depends on the Helm settings: the cache keys those too);
//   - "commit:<sha>": Path does not exist at that commit.
//
// A .gitsyncignore in a directory above Path makes the key "root:" too: the
// render reads it, and Path's tree does not cover it.
//
// The commit must already be fetched.
func (f *Fetcher) ContentKey(src Source, commit string) (string, error) {
	lr, err := f.repo(src)
	if err != nil {
		return "", err
	}
	defer f.done(lr)
	lr.mu.Lock()
	defer lr.mu.Unlock()
	c, err := lr.repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return "", gitErr(src, "read tree", fmt.Errorf("commit %s: %w", commit, err))
	}
	root, err := c.Tree()
	if err != nil {
		return "", gitErr(src, "read tree", err)
	}
	sub := root
	if p := src.CleanPath(); p != "." {
		sub, err = root.Tree(p)
		if errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
			return "commit:" + commit, nil
		}
		if err != nil {
			return "", gitErr(src, "read tree", err)
		}
	}
	if isChart(sub) {
		return ChartKeyPrefix + root.Hash.String(), nil
	}
	alone, err := selfContained(sub)
	if err == nil && alone {
		alone, err = noIgnoreFileAbove(root, src.CleanPath())
	}
	if err != nil {
		return "", gitErr(src, "read tree", err)
	}
	if alone {
		return "tree:" + sub.Hash.String(), nil
	}
	return "root:" + root.Hash.String(), nil
}

// selfContained reports whether rendering t can only read files inside t:
// it holds no symlink and no kustomization file, at any depth.
func selfContained(t *object.Tree) (bool, error) {
	for _, e := range t.Entries {
		switch {
		case e.Mode == filemode.Symlink:
			return false, nil
		case isKustomization(e.Name):
			return false, nil
		case e.Mode == filemode.Dir:
			sub, err := t.Tree(e.Name)
			if err != nil {
				return false, err
			}
			if ok, err := selfContained(sub); !ok || err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

func isKustomization(name string) bool {
	switch name {
	case "kustomization.yaml", "kustomization.yml", "Kustomization":
		return true
	}
	return false
}

// ChartKeyPrefix starts the content key of a Helm chart path.
const ChartKeyPrefix = "chart:"

// isChart reports whether t holds a Chart.yaml file at its top (helm.ChartFile;
// not imported, so Git reading does not link the Helm SDK).
func isChart(t *object.Tree) bool {
	e, err := t.FindEntry("Chart.yaml")
	return err == nil && e.Mode.IsFile()
}

// noIgnoreFileAbove reports whether no directory from the root down to
// path's parent holds a .gitsyncignore.
func noIgnoreFileAbove(root *object.Tree, path string) (bool, error) {
	if path == "." {
		return true, nil
	}
	t := root
	parts := strings.Split(path, "/")
	for i, name := range parts {
		if _, err := t.FindEntry(ignore.FileName); err == nil {
			return false, nil
		}
		if i == len(parts)-1 {
			break
		}
		sub, err := t.Tree(name)
		if err != nil {
			return false, err
		}
		t = sub
	}
	return true, nil
}
