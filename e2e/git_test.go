//go:build e2e

package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gitsync.dev/gitsync/internal/gittest"
)

// gitRepo is a bare repository served read-only over smart HTTP on the host
// address the node's pods reach, with a working clone to commit from.
type gitRepo struct {
	t    *testing.T
	work string
	home string
	URL  string // clone URL, http://HOST:PORT/git/repo.git
}

func newGitRepo(t *testing.T, host string) *gitRepo {
	t.Helper()
	root := t.TempDir()
	r := &gitRepo{t: t, work: filepath.Join(root, "work"), home: filepath.Join(root, "home")}
	for _, d := range []string{r.work, r.home, filepath.Join(root, "srv")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bare := filepath.Join(root, "srv", "repo.git")
	r.git("", "init", "--bare", "--initial-branch=main", bare)
	r.git(r.work, "init", "--initial-branch=main")
	r.git(r.work, "remote", "add", "origin", bare)

	srv := gittest.New(t, filepath.Join(root, "srv"), gittest.Options{Addr: net.JoinHostPort(host, "0"), Prefix: "/git"})
	r.URL = srv.URL + "/repo.git"
	return r
}

func (r *gitRepo) git(dir string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+r.home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@example.test",
		"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@example.test")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// commit writes files (path -> content; empty content removes the file),
// commits, pushes to main and returns the commit.
func (r *gitRepo) commit(msg string, files map[string]string) string {
	r.t.Helper()
	for path, content := range files {
		full := filepath.Join(r.work, path)
		if content == "" {
			_ = os.Remove(full)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	r.git(r.work, "add", "-A")
	r.git(r.work, "commit", "-m", msg)
	r.git(r.work, "push", "origin", "main")
	return strings.TrimSpace(r.git(r.work, "rev-parse", "HEAD"))
}
