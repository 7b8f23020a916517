package git

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

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
	keys, err := f.ContentKeys(src, commit, []string{src.CleanPath()})
	if err != nil {
		return "", err
	}
	return keys[0], nil
}

// ContentKeys returns the ContentKey of each of paths (cleaned, as
// Source.CleanPath returns them) of src's repository at commit, in order.
// The commit and each tree are read once for all of them: ranking the
// GitSyncs of a monorepo asks for hundreds of paths at once, and one
// ContentKey per path decoded the same parent trees every time.
func (f *Fetcher) ContentKeys(src Source, commit string, paths []string) ([]string, error) {
	lr, err := f.repo(src)
	if err != nil {
		return nil, err
	}
	defer f.done(lr)
	lr.mu.Lock()
	defer lr.mu.Unlock()
	c, err := lr.repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return nil, gitErr(src, "read tree", fmt.Errorf("commit %s: %w", commit, err))
	}
	root, err := c.Tree()
	if err != nil {
		return nil, gitErr(src, "read tree", err)
	}
	trees := &treeMemo{s: lr.repo.Storer, trees: map[plumbing.Hash]*object.Tree{}, alone: map[plumbing.Hash]bool{}}
	out := make([]string, len(paths))
	for i, p := range paths {
		if out[i], err = trees.contentKey(root, commit, p); err != nil {
			return nil, gitErr(src, "read tree", err)
		}
	}
	return out, nil
}

// treeMemo reads trees of one repository, each at most once, and
// remembers which are self-contained.
type treeMemo struct {
	s     storer.EncodedObjectStorer
	trees map[plumbing.Hash]*object.Tree
	alone map[plumbing.Hash]bool
}

// contentKey is ContentKey of path (cleaned) under root, the tree of commit.
func (m *treeMemo) contentKey(root *object.Tree, commit, path string) (string, error) {
	sub := root
	if path != "." {
		var err error
		if sub, err = m.at(root, path); err != nil {
			if errors.Is(err, object.ErrDirectoryNotFound) {
				return "commit:" + commit, nil
			}
			return "", err
		}
	}
	if isChart(sub) {
		return ChartKeyPrefix + root.Hash.String(), nil
	}
	alone, err := m.selfContained(sub)
	if err == nil && alone {
		alone, err = m.noIgnoreFileAbove(root, path)
	}
	if err != nil {
		return "", err
	}
	if alone {
		return "tree:" + sub.Hash.String(), nil
	}
	return "root:" + root.Hash.String(), nil
}

// tree reads the tree h.
func (m *treeMemo) tree(h plumbing.Hash) (*object.Tree, error) {
	if t, ok := m.trees[h]; ok {
		return t, nil
	}
	t, err := object.GetTree(m.s, h)
	if err != nil {
		return nil, err
	}
	m.trees[h] = t
	return t, nil
}

// dir returns the directory name of t; object.ErrDirectoryNotFound when t
// has no such entry or it is not a directory.
func (m *treeMemo) dir(t *object.Tree, name string) (*object.Tree, error) {
	e, err := t.FindEntry(name)
	if err != nil || e.Mode != filemode.Dir {
		return nil, object.ErrDirectoryNotFound
	}
	sub, err := m.tree(e.Hash)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, object.ErrDirectoryNotFound
	}
	return sub, err
}

// at returns the directory path (cleaned, not ".") under root.
func (m *treeMemo) at(root *object.Tree, path string) (*object.Tree, error) {
	t := root
	for name := range strings.SplitSeq(path, "/") {
		var err error
		if t, err = m.dir(t, name); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// selfContained reports whether rendering t can only read files inside t:
// it holds no symlink and no kustomization file, at any depth.
func (m *treeMemo) selfContained(t *object.Tree) (bool, error) {
	if alone, ok := m.alone[t.Hash]; ok {
		return alone, nil
	}
	alone := true
	for _, e := range t.Entries {
		switch {
		case e.Mode == filemode.Symlink, isKustomization(e.Name):
			alone = false
		case e.Mode == filemode.Dir:
			sub, err := m.tree(e.Hash)
			if err != nil {
				return false, err
			}
			ok, err := m.selfContained(sub)
			if err != nil {
				return false, err
			}
			alone = ok
		}
		if !alone {
			break
		}
	}
	m.alone[t.Hash] = alone
	return alone, nil
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
func (m *treeMemo) noIgnoreFileAbove(root *object.Tree, path string) (bool, error) {
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
		sub, err := m.dir(t, name)
		if err != nil {
			return false, err
		}
		t = sub
	}
	return true, nil
}
