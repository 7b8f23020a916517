package remote_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/remote"
)

func testResolver(t *testing.T, shareFor time.Duration) *remote.Resolver {
	t.Helper()
	f, err := git.NewFetcher(git.Options{Dir: t.TempDir(), Depth: 1, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	opts := remote.DefaultResolverOptions()
	opts.ShareFor = shareFor
	return remote.NewResolver(f, opts)
}

// TestResolverShares: 50 GitSyncs polling one URL and ref with the same
// credentials cost one ls-remote; one triggered after it (a webhook for a
// new push) gets a fresh answer with the new commit, never the old one.
//
// Checked by making resolve start a flight per call: 50 info/refs.
func TestResolverShares(t *testing.T) {
	url, srv, commit := gittest.ServePrivate(t)
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
		wg.Go(func() { revs[i], errs[i] = r.Resolve(ctx, src, "a/creds", start.Add(-time.Hour)) })
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
	rev, err := r.Resolve(ctx, src, "a/creds", pushed)
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
	url, srv, _ := gittest.ServePrivate(t)
	r := testResolver(t, time.Hour)
	ctx := context.Background()
	creds := func(name, pass string) *git.Auth {
		return git.AuthFromSecret("Secret/"+name, map[string][]byte{"username": []byte("git"), "password": []byte(pass)})
	}
	main := git.Ref{Branch: "main"}
	past := time.Now().Add(-time.Hour)
	if _, err := r.Resolve(ctx, git.Source{URL: url, Ref: main, Auth: creds("a/creds", "pass")}, "a/creds", past); err != nil {
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
		rev, err := r.Resolve(ctx, git.Source{URL: url, Ref: main, Auth: tc.auth}, tc.origin, past)
		if err == nil || git.Reason(err) == "" {
			t.Errorf("%s: resolve = %v, %v; want an authentication failure", tc.name, rev, err)
		}
	}
	srv.ResetCounts()
	if _, err := r.Resolve(ctx, git.Source{URL: url, Ref: main, Auth: creds("b/creds", "pass")}, "b/creds", past); err != nil {
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
	host := &gittest.DeadHost{Hang: true}
	url := host.Start(t) + "/app.git"
	r := testResolver(t, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.Resolve(ctx, git.Source{URL: url, Ref: git.Ref{Branch: "main"}}, "", time.Now())
		done <- err
	}()
	host.WaitFor(t, "the ls-remote connected", func(_, open, _ int) bool { return open == 1 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled resolve returned no error")
	}
	host.WaitFor(t, "the connection closed", func(_, open, _ int) bool { return open == 0 })
}
