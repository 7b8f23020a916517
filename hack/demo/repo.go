package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// repo is a bare repository served by the demo's Git server plus a working
// clone the story commits to, as a developer would.
type repo struct {
	url  string // what GitSync fetches
	work string // the working clone
	head string // commit pushed last
}

// newRepo creates DIR/git/NAME.git from the manifests in src (README and
// GitSync example files are left out: they are for people, not the cluster)
// and pushes one commit to main.
func newRepo(dir, gitURL, name, src string) (*repo, error) {
	bare := filepath.Join(dir, "git", name+".git")
	work := filepath.Join(dir, "work", name)
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
	entries, err := os.ReadDir(src)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.EqualFold(n, "README.md") || strings.HasPrefix(n, "gitsync") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(work, n), data, 0o644); err != nil {
			return nil, err
		}
	}
	r := &repo{url: gitURL + "/" + name + ".git", work: work}
	if err := git(work, "remote", "add", "origin", bare); err != nil {
		return nil, err
	}
	if err := r.commit("Add the guestbook"); err != nil {
		return nil, err
	}
	// a plain `git push` in the work copy, as the closing instructions say
	return r, git(work, "branch", "-q", "--set-upstream-to", "origin/main")
}

// initWork makes a work copy in which a person can commit without any Git
// configuration of their own.
func initWork(work string) error {
	if err := git("", "init", "-q", "-b", "main", work); err != nil {
		return err
	}
	for _, kv := range [][2]string{{"user.name", "gitsync demo"}, {"user.email", "demo@gitsync.invalid"}} {
		if err := git(work, "config", kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// edit replaces old with new in file, commits and pushes.
func (r *repo) edit(file, old, new, message string) error {
	p := filepath.Join(r.work, file)
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if !strings.Contains(string(data), old) {
		return fmt.Errorf("%s does not contain %q", file, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		return err
	}
	return r.commit(message)
}

// remove deletes file, commits and pushes.
func (r *repo) remove(file, message string) error {
	if err := git(r.work, "rm", "-q", file); err != nil {
		return err
	}
	return r.commit(message)
}

func (r *repo) commit(message string) error {
	if err := git(r.work, "add", "-A"); err != nil {
		return err
	}
	if err := git(r.work, "commit", "-q", "-m", message); err != nil {
		return err
	}
	if err := git(r.work, "push", "-q", "origin", "main"); err != nil {
		return err
	}
	out, err := exec.Command("git", "-C", r.work, "rev-parse", "HEAD").Output()
	if err != nil {
		return err
	}
	r.head = strings.TrimSpace(string(out))
	return nil
}

func git(dir string, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=gitsync demo", "GIT_AUTHOR_EMAIL=demo@gitsync.invalid",
		"GIT_COMMITTER_NAME=gitsync demo", "GIT_COMMITTER_EMAIL=demo@gitsync.invalid")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}
