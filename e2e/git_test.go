//go:build e2e

package e2e

import (
	"net"
	"path/filepath"
	"testing"

	"gitsync.dev/gitsync/internal/gittest"
)

// gitRepo is a bare repository served read-only over smart HTTP on the host
// address the node's pods reach, with a working clone to commit from
// (internal/gittest's driver).
type gitRepo struct {
	work *gittest.Repo
	URL  string // clone URL, http://HOST:PORT/git/repo.git
}

func newGitRepo(t *testing.T, host string) *gitRepo {
	t.Helper()
	root := t.TempDir()
	bare := filepath.Join(root, "srv", "repo.git")
	gittest.NewBare(t, bare)
	work := gittest.NewRepo(t, filepath.Join(root, "work"))
	work.Git("remote", "add", "origin", bare)
	srv := gittest.New(t, filepath.Join(root, "srv"), gittest.Options{Addr: net.JoinHostPort(host, "0"), Prefix: "/git"})
	return &gitRepo{work: work, URL: srv.URL + "/repo.git"}
}

// commit writes files (path -> content; empty content removes the file),
// commits, pushes to main and returns the commit.
func (r *gitRepo) commit(msg string, files map[string]string) string {
	c := r.work.Commit(msg, files)
	r.work.Push("origin", "main")
	return c
}
