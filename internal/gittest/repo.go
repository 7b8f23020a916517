package gittest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Repo is a real Git repository in a directory, driven by the git CLI with
// the machine's configuration shut out (no system or global config, a fixed
// author), so tests behave the same on every machine. Serve its parent
// directory with a Server, or reach it by URL (file://), and changing it is
// what a push to a host would do.
type Repo struct {
	// Dir is the work tree.
	Dir string
	t   testing.TB
}

// NewRepo creates dir (and its parents) and an empty repository in it on
// branch main. It skips the test when git is not installed.
func NewRepo(t testing.TB, dir string) *Repo {
	t.Helper()
	r := OpenRepo(t, dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r.Git("init", "-q", "-b", "main")
	return r
}

// OpenRepo drives the repository (or directory about to become one) at dir
// without changing it.
func OpenRepo(t testing.TB, dir string) *Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	return &Repo{Dir: dir, t: t}
}

// URL is the repository's file:// URL.
func (r *Repo) URL() string { return "file://" + r.Dir }

// Git runs git with args in the work tree and returns its output without
// surrounding space; a failure ends the test with git's output.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	return r.GitInput(nil, args...)
}

// GitInput is Git with stdin as git's standard input (git fast-import).
func (r *Repo) GitInput(stdin []byte, args ...string) string {
	r.t.Helper()
	return r.run(nil, stdin, args...)
}

// run is git with args, extra environment (a signer's) and stdin.
func (r *Repo) run(env []string, stdin []byte, args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.Dir
	cmd.Env = append(Env(r.Dir), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Env is the environment the driver runs git with: home is HOME, the
// system and global configuration are ignored, author and committer fixed.
func Env(home string) []string {
	return append(os.Environ(),
		"HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
	)
}

// Write writes files (slash-separated path relative to the work tree ->
// content) without committing; an empty content removes the file.
func (r *Repo) Write(files map[string]string) {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.Dir, filepath.FromSlash(name))
		if content == "" {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				r.t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

// Commit writes files as Write does, commits every change in the work tree
// on the current branch (an empty commit when nothing changed) and returns
// the new commit's SHA.
func (r *Repo) Commit(msg string, files map[string]string) string {
	r.t.Helper()
	r.Write(files)
	r.Git("add", "-A")
	r.Git("commit", "-q", "--allow-empty", "-m", msg)
	return r.Head()
}

// Head returns the SHA of the checked-out commit.
func (r *Repo) Head() string {
	r.t.Helper()
	return r.Git("rev-parse", "HEAD")
}

// Branch creates branch name at the current commit and checks it out.
func (r *Repo) Branch(name string) {
	r.t.Helper()
	r.Git("checkout", "-q", "-b", name)
}

// Checkout checks out an existing branch, tag or commit.
func (r *Repo) Checkout(ref string) {
	r.t.Helper()
	r.Git("checkout", "-q", ref)
}

// Tag creates the lightweight tag name at the current commit.
func (r *Repo) Tag(name string) {
	r.t.Helper()
	r.Git("tag", name)
}

// Push pushes refspecs (the current branch when none) to remote, a remote's
// name or a URL or path.
func (r *Repo) Push(remote string, refspecs ...string) {
	r.t.Helper()
	if len(refspecs) == 0 {
		refspecs = []string{"HEAD"}
	}
	r.Git(append([]string{"push", "-q", remote}, refspecs...)...)
}

// NewBare creates an empty bare repository on branch main at dir, for a
// Server to export and a Repo to push to.
func NewBare(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	OpenRepo(t, dir).Git("init", "-q", "--bare", "-b", "main")
}
