package controller

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/source/git"
)

// privateRepo serves one commit of a repository that needs basic auth
// git:pass, returning its URL, the server and a function committing again.
func privateRepo(t *testing.T) (string, *gittest.Server, func() string) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "app.git")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@gitsync.dev", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@gitsync.dev")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	commit := func() string {
		git("commit", "-q", "--allow-empty", "-m", "change")
		return git("rev-parse", "HEAD")
	}
	commit()
	s := gittest.New(t, root, gittest.Options{User: "git", Password: "pass"})
	return s.URL + "/app.git", s, commit
}

func testResolver(t *testing.T, shareFor time.Duration) *resolver {
	t.Helper()
	f, err := git.NewFetcher(git.Options{Dir: t.TempDir(), Depth: 1, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	l := DefaultLimits()
	l.ResolveShareFor = shareFor
	return newResolver(f, l, clock.RealClock{}, context.Background)
}

// TestResolverShares: 50 GitSyncs polling one URL and ref with the same
// credentials cost one ls-remote; one triggered after it (a webhook for a
// new push) gets a fresh answer with the new commit, never the old one.
//
// Checked by making resolve start a flight per call: 50 info/refs.
func TestResolverShares(t *testing.T) {
	url, srv, commit := privateRepo(t)
	r := testResolver(t, time.Hour)
	src := git.Source{URL: url, Ref: git.Ref{Branch: "main"},
		Auth: git.AuthFromSecret("Secret/a/creds", map[string][]byte{"username": []byte("git"), "password": []byte("pass")})}
	ctx := context.Background()
	srv.ResetCounts()
	start := time.Now()
	var wg sync.WaitGroup
	revs := make([]git.Revision, 50)
	errs := make([]error, 50)
	for i := range 50 {
		wg.Go(func() { revs[i], errs[i] = r.resolve(ctx, src, "a/creds", start.Add(-time.Hour)) })
	}
	wg.Wait()
	for i := range 50 {
		if errs[i] != nil || revs[i] != revs[0] {
			t.Fatalf("resolve %d = %v, %v; want %v", i, revs[i], errs[i], revs[0])
		}
	}
	if n := srv.ListRefs.Load(); n != 1 {
		t.Errorf("50 resolves sent %d ls-remotes, want 1", n)
	}
	next := commit()
	pushed := time.Now()
	rev, err := r.resolve(ctx, src, "a/creds", pushed)
	if err != nil || rev.Commit != next {
		t.Errorf("a resolve triggered after the push = %v, %v; want commit %s", rev, err, next)
	}
	if n := srv.ListRefs.Load(); n != 2 {
		t.Errorf("after the trigger: %d ls-remotes, want 2", n)
	}
}

// TestResolverKeepsTenantsApart is the attack: tenant a's GitSync resolved
// a private repository with its credentials; tenant b names the same URL
// and ref with none, with a wrong password, or with a's password from its
// own Secret. Within the sharing window, none of b's resolves gets a's
// answer: the anonymous and wrong ones fail authentication; the one with
// the right password asks the host itself (its own Secret's name goes in
// its errors).
//
// Checked by leaving credentials and origin out of resolveKey: b's
// anonymous resolve returns a's revision.
func TestResolverKeepsTenantsApart(t *testing.T) {
	url, srv, _ := privateRepo(t)
	r := testResolver(t, time.Hour)
	ctx := context.Background()
	creds := func(name, pass string) *git.Auth {
		return git.AuthFromSecret("Secret/"+name, map[string][]byte{"username": []byte("git"), "password": []byte(pass)})
	}
	main := git.Ref{Branch: "main"}
	past := time.Now().Add(-time.Hour)
	if _, err := r.resolve(ctx, git.Source{URL: url, Ref: main, Auth: creds("a/creds", "pass")}, "a/creds", past); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		auth   *git.Auth
		origin string
	}{
		{"anonymous", nil, ""},
		{"wrong password", creds("b/creds", "guess"), "b/creds"},
	} {
		rev, err := r.resolve(ctx, git.Source{URL: url, Ref: main, Auth: tc.auth}, tc.origin, past)
		if err == nil || git.Reason(err) == "" {
			t.Errorf("%s: resolve = %v, %v; want an authentication failure", tc.name, rev, err)
		}
	}
	srv.ResetCounts()
	if _, err := r.resolve(ctx, git.Source{URL: url, Ref: main, Auth: creds("b/creds", "pass")}, "b/creds", past); err != nil {
		t.Fatal(err)
	}
	if n := srv.ListRefs.Load(); n != 1 {
		t.Errorf("b's Secret with a's password sent %d ls-remotes, want its own 1", n)
	}
}

// TestResolverCancelsUnwanted: when every caller waiting for a resolve
// gives up (its reconcile timed out), the request is cancelled rather
// than left to hold a connection nobody waits for.
func TestResolverCancelsUnwanted(t *testing.T) {
	host := &DeadHost{Hang: true}
	url := host.Start(t) + "/app.git"
	r := testResolver(t, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.resolve(ctx, git.Source{URL: url, Ref: git.Ref{Branch: "main"}}, "", time.Now())
		done <- err
	}()
	host.WaitFor(t, "the ls-remote connected", func(_, open, _ int) bool { return open == 1 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled resolve returned no error")
	}
	host.WaitFor(t, "the connection closed", func(_, open, _ int) bool { return open == 0 })
}
