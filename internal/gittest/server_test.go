package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServer: the server answers git's own client under its prefix, counts
// what it was asked, refuses a wrong password with 401 and takes a new
// password while it runs.
func TestServer(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "app.git")
	run := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "HOME="+root, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_TERMINAL_PROMPT=0", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo}, {"-C", repo, "commit", "-q", "--allow-empty", "-m", "one"}} {
		if out, err := run(args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	s := New(t, root, Options{Prefix: "/git", User: "u", Password: "p1"})
	withPass := func(p string) string { return strings.Replace(s.URL, "http://", "http://u:"+p+"@", 1) + "/app.git" }

	out, err := run("ls-remote", withPass("p1"))
	if err != nil || !strings.Contains(out, "refs/heads/main") {
		t.Fatalf("ls-remote with the password: %v\n%s", err, out)
	}
	if n := s.ListRefs.Load(); n != 1 {
		t.Errorf("ListRefs = %d after one ls-remote, want 1", n)
	}
	if out, err := run("ls-remote", withPass("wrong")); err == nil {
		t.Errorf("ls-remote with a wrong password succeeded:\n%s", out)
	}
	s.SetPassword("p2")
	if out, err := run("ls-remote", withPass("p1")); err == nil {
		t.Errorf("the old password still works after SetPassword:\n%s", out)
	}
	if out, err := run("ls-remote", withPass("p2")); err != nil {
		t.Errorf("the new password: %v\n%s", err, out)
	}
	s.ResetCounts()
	if s.ListRefs.Load()+s.UploadPack.Load()+s.Bytes.Load() != 0 {
		t.Error("counts not reset")
	}
}
