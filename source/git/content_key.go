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
//   - "dirs:<digest>": the trees of Path and of the directories its
//     kustomizations name (bases, components, patches, generators' files,
//     followed until no new one is named), when Path holds kustomizations
//     and no symlink (see closure);
//   - "root:<hash>": the whole repository tree, when a symlink may pull in
//     files from elsewhere in the repo, a kustomization names the
//     repository's root or a file there, or the closure is too large;
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
	in, err := f.inputsOf(src, commit, paths)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(in))
	for i := range in {
		out[i] = in[i].Key
	}
	return out, nil
}

// Inputs returns what a render of src's path at commit (fetched) reads:
// its ContentKey and the directories CheckoutTrees must write for it.
func (f *Fetcher) Inputs(src Source, commit string) (Inputs, error) {
	in, err := f.inputsOf(src, commit, []string{src.CleanPath()})
	if err != nil {
		return Inputs{}, err
	}
	return in[0], nil
}

// ChartInputs is Inputs of a path whose values a chart downloaded from a
// repository renders (spec.helm.chart): its values files may lie anywhere
// in the repository, so, as for a chart directory, the key is the whole
// tree's (ChartKeyPrefix) and the whole repository is checked out.
func (f *Fetcher) ChartInputs(src Source, commit string) (Inputs, error) {
	var in Inputs
	err := f.withRoot(src, commit, func(root *object.Tree, _ storer.EncodedObjectStorer) error {
		in = Inputs{Key: ChartKeyPrefix + root.Hash.String(), Dirs: []string{"."}}
		return nil
	})
	return in, err
}

func (f *Fetcher) inputsOf(src Source, commit string, paths []string) ([]Inputs, error) {
	out := make([]Inputs, len(paths))
	err := f.withRoot(src, commit, func(root *object.Tree, s storer.EncodedObjectStorer) error {
		trees := &treeMemo{s: s, trees: map[plumbing.Hash]*object.Tree{}, alone: map[plumbing.Hash]bool{}}
		for i, p := range paths {
			var err error
			if out[i], err = trees.inputs(root, commit, p); err != nil {
				return gitErr(src, "read tree", err)
			}
		}
		return nil
	})
	return out, err
}

// withRoot calls fn with the root tree of commit (fetched) in src's
// repository, which stays locked meanwhile.
func (f *Fetcher) withRoot(src Source, commit string, fn func(*object.Tree, storer.EncodedObjectStorer) error) error {
	lr, err := f.repo(src)
	if err != nil {
		return err
	}
	defer f.done(lr)
	lr.mu.Lock()
	defer lr.mu.Unlock()
	c, err := lr.repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return gitErr(src, "read tree", fmt.Errorf("commit %s: %w", commit, err))
	}
	root, err := c.Tree()
	if err != nil {
		return gitErr(src, "read tree", err)
	}
	return fn(root, lr.repo.Storer)
}

// treeMemo reads trees of one repository, each at most once, and
// remembers which are self-contained.
type treeMemo struct {
	s     storer.EncodedObjectStorer
	trees map[plumbing.Hash]*object.Tree
	alone map[plumbing.Hash]bool
}

// Inputs is what a render of one path at one commit reads.
type Inputs struct {
	// Key is the path's ContentKey.
	Key string
	// Dirs are the directories to check out (clean repository paths, none
	// below another): the path alone, the path and the bases its
	// kustomizations name, or "." for the whole repository.
	Dirs []string
}

// inputs is Inputs of path (cleaned) under root, the tree of commit.
func (m *treeMemo) inputs(root *object.Tree, commit, path string) (Inputs, error) {
	whole := Inputs{Key: "root:" + root.Hash.String(), Dirs: []string{"."}}
	sub := root
	if path != "." {
		var err error
		if sub, err = m.at(root, path); err != nil {
			if errors.Is(err, object.ErrDirectoryNotFound) {
				return Inputs{Key: "commit:" + commit, Dirs: []string{"."}}, nil
			}
			return Inputs{}, err
		}
	}
	if isChart(sub) {
		return Inputs{Key: ChartKeyPrefix + root.Hash.String(), Dirs: []string{"."}}, nil
	}
	alone, err := m.selfContained(sub)
	if err != nil {
		return Inputs{}, err
	}
	dirs := []string{path}
	if !alone {
		if dirs, err = m.closure(root, path); errors.Is(err, errWholeRepo) {
			return whole, nil
		} else if err != nil {
			return Inputs{}, err
		}
	}
	for _, d := range dirs {
		if ok, err := m.noIgnoreFileAbove(root, d); err != nil || !ok {
			return whole, err
		}
	}
	if alone {
		return Inputs{Key: TreeKeyPrefix + sub.Hash.String(), Dirs: dirs}, nil
	}
	key, err := m.closureKey(root, dirs)
	if err != nil {
		return Inputs{}, err
	}
	return Inputs{Key: key, Dirs: dirs}, nil
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

// TreeKeyPrefix starts the content key of a path whose render reads its own
// tree alone: plain YAML, no symlink, no kustomization, no ignore file above.
const TreeKeyPrefix = "tree:"

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
