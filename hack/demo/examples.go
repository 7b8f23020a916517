package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// upstreamURL is where examples/gitsyncs/*.yaml and the examples' own
// GitSyncs fetch from; the demo's copy fetches from the demo instead.
const upstreamURL = "https://github.com/gitsync-dev/gitsync"

// newExamplesRepo serves every example as examples/ of DIR/git/gitsync.git,
// the layout of the upstream repository, so a GitSync of examples/gitsyncs
// only needs its URL changed to work against the demo (the kustomization in
// examples/gitsyncs-local does that). The upstream URL inside the examples
// (team-a's GitSync in multi-tenant/platform) is rewritten to the demo's,
// so nothing reaches the network. Go files (the examples' tests) are left out.
func newExamplesRepo(dir, gitURL, examples string) (*repo, error) {
	bare := filepath.Join(dir, "git", "gitsync.git")
	work := filepath.Join(dir, "work", "gitsync")
	for _, p := range []string{bare, work} {
		if err := os.RemoveAll(p); err != nil {
			return nil, err
		}
	}
	if err := git("", "init", "-q", "--bare", "-b", "main", bare); err != nil {
		return nil, err
	}
	if err := initWork(work); err != nil {
		return nil, err
	}
	r := &repo{url: gitURL + "/gitsync.git", work: work}
	err := filepath.WalkDir(examples, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".go") {
			return err
		}
		rel, err := filepath.Rel(examples, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		data = []byte(strings.ReplaceAll(string(data), upstreamURL, r.url))
		dst := filepath.Join(work, "examples", rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		return nil, err
	}
	if err := git(work, "remote", "add", "origin", bare); err != nil {
		return nil, err
	}
	return r, r.commit("Add the examples")
}
