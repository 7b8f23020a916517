package git

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ContentKey names the input a render of src.Path at commit depends on, so
// two commits with the same key render identically:
//   - "tree:<hash>": the tree of Path, when Path holds no symlink and no
//     kustomization (plain YAML rendering reads nothing else);
//   - "root:<hash>": the whole repository tree, when a symlink or a
//     kustomization under Path may pull in files from elsewhere in the repo;
//   - "commit:<sha>": Path does not exist at that commit.
//
// The commit must already be fetched.
func (f *Fetcher) ContentKey(src Source, commit string) (string, error) {
	lr, err := f.repo(src)
	if err != nil {
		return "", err
	}
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
	alone, err := selfContained(sub)
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
