package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/remote"
)

// TestTriggerSharesPastWindow: the GitSyncs of one webhook reach the
// resolver one after the other, for longer than ResolveShareFor when there
// are hundreds. Each takes the answer asked after the delivery however
// long ago (one ls-remote per push), while a poll past the window still
// asks the remote again, and a trigger never takes an answer from before
// it.
//
// Checked against the window applied to triggers too (the resolver
// dropping finished answers older than shareFor, the mark's answer bounded
// by now − shareFor): the trigger 10 s later sent a second ls-remote.
func TestTriggerSharesPastWindow(t *testing.T) {
	url, srv, commit := gittest.ServePrivate(t)
	r, clk, l, src := triggerResolver(t, url)
	gs := &v1.GitSync{Spec: v1.GitSyncSpec{Interval: metav1.Duration{Duration: time.Hour}}}
	ctx := context.Background()

	next := commit()
	delivered := clk.Now()
	st := &syncState{}
	st.markFetch(delivered)
	first, err := r.Resolve(ctx, src, "a/creds", st.takeFetchMark(gs, clk.Now(), l.ResolveShareFor))
	if err != nil || first.Commit != next {
		t.Fatalf("first trigger = %v, %v; want %s", first, err, next)
	}
	srv.ResetCounts()

	clk.Step(10 * time.Second) // 499 GitSyncs later
	late := &syncState{}
	late.markFetch(delivered)
	notBefore := late.takeFetchMark(gs, clk.Now(), l.ResolveShareFor)
	if !notBefore.Equal(delivered) {
		t.Errorf("a trigger's answer must be asked after %v, got %v", delivered, notBefore)
	}
	if rev, err := r.Resolve(ctx, src, "a/creds", notBefore); err != nil || rev != first {
		t.Errorf("trigger 10 s later = %v, %v; want the shared %v", rev, err, first)
	}
	if n := srv.ListRefs.Load(); n != 0 {
		t.Errorf("trigger 10 s later sent %d ls-remotes, want 0 (the answer after the delivery)", n)
	}

	poll := (&syncState{}).takeFetchMark(gs, clk.Now(), l.ResolveShareFor)
	if _, err := r.Resolve(ctx, src, "a/creds", poll); err != nil {
		t.Fatal(err)
	}
	if n := srv.ListRefs.Load(); n != 1 {
		t.Errorf("a poll past the window sent %d ls-remotes, want 1", n)
	}

	pushed := commit()
	clk.Step(time.Millisecond)
	again := &syncState{}
	again.markFetch(clk.Now())
	rev, err := r.Resolve(ctx, src, "a/creds", again.takeFetchMark(gs, clk.Now(), l.ResolveShareFor))
	if err != nil || rev.Commit != pushed {
		t.Errorf("a trigger after a new push = %v, %v; want %s", rev, err, pushed)
	}
}

// TestTriggerRetriesFailedPastWindow: a failed ls-remote is shared only
// within ResolveShareFor; a trigger arriving later than that asks the
// remote again instead of failing with the old answer.
//
// Checked by sharing failures like answers: no second request.
func TestTriggerRetriesFailedPastWindow(t *testing.T) {
	url, srv, _ := gittest.ServePrivate(t)
	if !strings.HasSuffix(url, "/app.git") {
		t.Fatalf("gittest.ServePrivate URL %s", url)
	}
	f, err := git.NewFetcher(git.Options{Dir: t.TempDir(), Depth: 1, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	r := remote.NewResolver(f, remote.ResolverOptions{ShareFor: DefaultLimits().ResolveShareFor, Clock: clk, Base: context.Background})
	src := git.Source{URL: strings.TrimSuffix(url, "app.git") + "missing.git", Ref: git.Ref{Branch: "main"},
		Auth: git.AuthFromSecret("Secret/a/creds", map[string][]byte{"username": []byte("git"), "password": []byte("pass")})}
	delivered := clk.Now()
	srv.ResetCounts()
	if _, err := r.Resolve(context.Background(), src, "a/creds", delivered); err == nil {
		t.Fatal("resolve of a missing repository succeeded")
	}
	first := srv.ListRefs.Load()
	clk.Step(10 * time.Second)
	if _, err := r.Resolve(context.Background(), src, "a/creds", delivered); err == nil {
		t.Fatal("resolve of a missing repository succeeded")
	}
	if n := srv.ListRefs.Load(); n <= first {
		t.Errorf("a trigger 10 s after a failed ls-remote sent no request (%d in all); want it to ask again", n)
	}
}

// TestNewSpecTakesNoOlderAnswer: a GitSync created (or edited) right after
// a push asks the remote itself instead of taking an answer shared from
// before the push: its path may exist only in the new commit. An agent
// restarting over GitSyncs it applied before still shares.
//
// Checked without the rule: the new GitSync got the commit before the
// push (in the e2e test, three of six new GitSyncs went Stalled "path not
// found" for an hour).
func TestNewSpecTakesNoOlderAnswer(t *testing.T) {
	url, srv, commit := gittest.ServePrivate(t)
	r, clk, l, src := triggerResolver(t, url)
	applied := &v1.GitSync{Spec: v1.GitSyncSpec{Interval: metav1.Duration{Duration: time.Hour}}}
	applied.Generation, applied.Status.ObservedGeneration = 1, 1
	ctx := context.Background()

	before := commit()
	if rev, err := r.Resolve(ctx, src, "a/creds", (&syncState{}).takeFetchMark(applied, clk.Now(), l.ResolveShareFor)); err != nil || rev.Commit != before {
		t.Fatalf("first resolve = %v, %v; want %s", rev, err, before)
	}
	pushed := commit()
	clk.Step(time.Second) // within ResolveShareFor
	srv.ResetCounts()

	created := applied.DeepCopy()
	created.Status.ObservedGeneration = 0
	// Marked by a webhook delivered before the first answer (so a mark
	// alone would take that answer): a new spec still asks again.
	marked := &syncState{}
	marked.markFetch(clk.Now().Add(-2 * time.Second))
	if rev, err := r.Resolve(ctx, src, "a/creds", marked.takeFetchMark(created, clk.Now(), l.ResolveShareFor)); err != nil || rev.Commit != pushed {
		t.Errorf("a new GitSync marked before the push resolved %v, %v; want the pushed %s", rev, err, pushed)
	}
	if n := srv.ListRefs.Load(); n != 1 {
		t.Errorf("a new GitSync marked before the push sent %d ls-remotes, want 1", n)
	}
	clk.Step(time.Millisecond)
	srv.ResetCounts()
	if rev, err := r.Resolve(ctx, src, "a/creds", (&syncState{}).takeFetchMark(created, clk.Now(), l.ResolveShareFor)); err != nil || rev.Commit != pushed {
		t.Errorf("a new GitSync resolved %v, %v; want the pushed %s", rev, err, pushed)
	}
	if n := srv.ListRefs.Load(); n != 1 {
		t.Errorf("a new GitSync sent %d ls-remotes, want 1", n)
	}
	restarted := &syncState{}
	if _, err := r.Resolve(ctx, src, "a/creds", restarted.takeFetchMark(applied, clk.Now(), l.ResolveShareFor)); err != nil {
		t.Fatal(err)
	}
	if n := srv.ListRefs.Load(); n != 1 {
		t.Errorf("a GitSync applied before the restart sent its own ls-remote (%d in all), want the shared answer", n)
	}
}

// triggerResolver is a resolver on a fake clock with default limits, and
// the source of url with the credentials gittest.ServePrivate accepts.
func triggerResolver(t *testing.T, url string) (*remote.Resolver, *clocktesting.FakeClock, Limits, git.Source) {
	t.Helper()
	f, err := git.NewFetcher(git.Options{Dir: t.TempDir(), Depth: 1, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	l := DefaultLimits()
	src := git.Source{URL: url, Ref: git.Ref{Branch: "main"},
		Auth: git.AuthFromSecret("Secret/a/creds", map[string][]byte{"username": []byte("git"), "password": []byte("pass")})}
	return remote.NewResolver(f, remote.ResolverOptions{ShareFor: l.ResolveShareFor, Clock: clk, Base: context.Background}), clk, l, src
}
