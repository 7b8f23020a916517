package git

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"sigs.k8s.io/yaml"
)

// KustomizeKeyPrefix starts the content key of a path whose kustomizations
// read only a known set of directories (its closure, see closure): the key
// is a digest of those directories and their trees, so a change elsewhere
// in the repository keeps it, and a change in a base changes it.
const KustomizeKeyPrefix = "dirs:"

// Bounds of the closure: past them the path's key is the whole
// repository's, as before closures (never wrong, only wider).
const (
	maxClosureDirs          = 256
	maxKustomizationBytes   = 1 << 20
	maxKustomizationsWalked = 4096
)

// errWholeRepo: the closure cannot be told (a symlink, a reference to the
// repository's root, too many directories); the render gets everything.
var errWholeRepo = errors.New("the render may read the whole repository")

// closure returns the directories (clean repository paths, none below
// another) whose files rendering path can read: path itself, and every
// directory or file's directory that a kustomization in any of them names
// (resources, components, bases, patches, generators' files, Helm values
// files: every string of the file that names an entry of the repository),
// until no new one is named. It returns errWholeRepo when that cannot be
// bounded.
func (m *treeMemo) closure(root *object.Tree, start string) ([]string, error) {
	var dirs []string
	queue := []string{start}
	walked := 0
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if d == "." {
			return nil, errWholeRepo
		}
		if slices.ContainsFunc(dirs, func(c string) bool { return within(d, c) }) {
			continue
		}
		dirs = slices.DeleteFunc(dirs, func(c string) bool { return within(c, d) })
		if dirs = append(dirs, d); len(dirs) > maxClosureDirs {
			return nil, errWholeRepo
		}
		t, err := m.at(root, d)
		if err != nil {
			return nil, err
		}
		named, err := m.named(root, t, d, &walked)
		if err != nil {
			return nil, err
		}
		queue = append(queue, named...)
	}
	slices.Sort(dirs)
	return dirs, nil
}

// within reports whether repository path p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// named walks t (the directory dir) and returns the directories that its
// kustomizations name outside dir; errWholeRepo on a symlink.
func (m *treeMemo) named(root, t *object.Tree, dir string, walked *int) ([]string, error) {
	var out []string
	for _, e := range t.Entries {
		p := path.Join(dir, e.Name)
		switch {
		case e.Mode == filemode.Symlink:
			return nil, errWholeRepo
		case e.Mode == filemode.Dir:
			sub, err := m.tree(e.Hash)
			if err != nil {
				return nil, err
			}
			more, err := m.named(root, sub, p, walked)
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
		case isKustomization(e.Name):
			if *walked++; *walked > maxKustomizationsWalked {
				return nil, errWholeRepo
			}
			refs, err := m.references(e.Hash)
			if err != nil {
				return nil, err
			}
			for _, ref := range refs {
				target, ok := m.entry(root, path.Join(dir, ref))
				if ok && !within(target, dir) {
					out = append(out, target)
				}
			}
		}
	}
	return out, nil
}

// references returns every string in the kustomization blob h that may be
// a relative path: all scalars, and for "key=path" (generators' files)
// the part after "=". Remote URLs and absolute paths are left out: the
// renderer refuses them whatever is checked out.
func (m *treeMemo) references(h plumbing.Hash) ([]string, error) {
	blob, err := object.GetBlob(m.s, h)
	if err != nil {
		return nil, err
	}
	if blob.Size > maxKustomizationBytes {
		return nil, errWholeRepo
	}
	r, err := blob.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var doc any
	if yaml.Unmarshal(data, &doc) != nil {
		return nil, errWholeRepo // the render reports it; key it widely
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		case string:
			if strings.Contains(v, "://") || strings.HasPrefix(v, "/") || strings.Contains(v, "\n") {
				return
			}
			out = append(out, v)
			if _, after, ok := strings.Cut(v, "="); ok {
				out = append(out, after)
			}
		}
	}
	walk(doc)
	return out, nil
}

// entry returns the directory p (joined and cleaned) names in root: p if
// it is a directory, its parent if it is a file; ok false when p is not
// in the repository or leaves it.
func (m *treeMemo) entry(root *object.Tree, p string) (string, bool) {
	p = path.Clean(p)
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	if p == "." {
		return ".", true
	}
	parent, name := path.Split(p)
	parent = strings.TrimSuffix(parent, "/")
	t := root
	if parent != "" {
		var err error
		if t, err = m.at(root, parent); err != nil {
			return "", false
		}
	}
	e, err := t.FindEntry(name)
	if err != nil {
		return "", false
	}
	if e.Mode == filemode.Dir {
		return p, true
	}
	if parent == "" {
		return ".", true
	}
	return parent, true
}

// closureKey is the content key of dirs: each directory and its tree.
func (m *treeMemo) closureKey(root *object.Tree, dirs []string) (string, error) {
	h := sha256.New()
	for _, d := range dirs {
		t, err := m.at(root, d)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%s\x00", d, t.Hash)
	}
	return KustomizeKeyPrefix + hex.EncodeToString(h.Sum(nil)), nil
}
