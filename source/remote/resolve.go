package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"gitsync.dev/gitsync/source/git"
)

// Lister asks a remote for the revision of a ref: one listing request
// (ls-remote) per call. *git.Fetcher is one.
type Lister interface {
	Resolve(ctx context.Context, src git.Source) (git.Revision, error)
}

var _ Lister = (*git.Fetcher)(nil)

// Resolver shares ls-remotes between GitSyncs: every GitSync following the
// same URL and ref with the same credentials gets the answer of one request
// per moment, however many there are (a monorepo's 500 paths cost one
// request per push, not 500).
//
// A caller says from when an answer is fresh enough (notBefore): a poll
// takes any answer asked within ResolverOptions.ShareFor; a trigger (a
// webhook, a changed Secret, a requested-at annotation) only one asked
// after the trigger, so a push is never hidden by an answer from before it.
//
// Answers are shared only between callers presenting the same credentials
// (and the same Secret: errors name it): a tenant without access to a
// private repository cannot learn its refs through another tenant's resolve.
type Resolver struct {
	lister Lister
	opts   ResolverOptions

	mu      sync.Mutex
	flights map[string]*flight
}

// ResolverOptions configure a Resolver.
type ResolverOptions struct {
	// ShareFor is how long a finished answer serves polls (a caller whose
	// notBefore is older). A failed answer is shared only this long, even
	// with triggers. 0 shares only requests in flight.
	ShareFor time.Duration
	// Clock reads the time answers are asked at; a fake clock in tests.
	Clock clock.PassiveClock
	// Base is the context flights run in: one caller's end (its reconcile
	// timeout) must not fail the others waiting on the same flight; the
	// Lister's own timeout bounds it, and the last waiter leaving ends it.
	// The agent's lifetime.
	Base func() context.Context
}

// DefaultResolverOptions share answers for 2 seconds on the real clock,
// with flights in context.Background.
func DefaultResolverOptions() ResolverOptions {
	return ResolverOptions{ShareFor: 2 * time.Second, Clock: clock.RealClock{}, Base: context.Background}
}

// flight is one ls-remote and its answer, once done is closed. It is
// cancelled when every caller waiting for it has given up.
type flight struct {
	started time.Time
	ctx     context.Context
	cancel  context.CancelFunc
	waiters int // guarded by Resolver.mu
	done    chan struct{}
	rev     git.Revision
	err     error
}

// NewResolver returns a Resolver asking through l; zero fields of opts
// take DefaultResolverOptions' values (ShareFor 0 stays 0).
func NewResolver(l Lister, opts ResolverOptions) *Resolver {
	def := DefaultResolverOptions()
	if opts.Clock == nil {
		opts.Clock = def.Clock
	}
	if opts.Base == nil {
		opts.Base = def.Base
	}
	return &Resolver{lister: l, opts: opts, flights: map[string]*flight{}}
}

// keepAnswers is how long a finished ls-remote is kept for triggers that
// arrived before it.
const keepAnswers = 5 * time.Minute

// Resolve returns src's revision from an ls-remote started at notBefore or
// later, joining one in flight or just done when there is one. origin
// names where src.Auth was read ("ns/name" of its Secret), empty for none.
// An error is the Lister's, or the caller's context ending (wrapped, naming
// the redacted URL).
func (r *Resolver) Resolve(ctx context.Context, src git.Source, origin string, notBefore time.Time) (git.Revision, error) {
	key := resolveKey(src, origin)
	now := r.opts.Clock.Now()
	r.mu.Lock()
	f, ok := r.flights[key]
	if !ok || f.started.Before(notBefore) || failedBefore(f, now.Add(-r.opts.ShareFor)) {
		f = &flight{started: now, done: make(chan struct{})}
		f.ctx, f.cancel = context.WithCancel(r.opts.Base())
		r.flights[key] = f
		r.dropOld(now)
		go r.run(f, src)
	}
	f.waiters++
	r.mu.Unlock()
	select {
	case <-f.done:
		r.leave(key, f)
		return f.rev, f.err
	case <-ctx.Done():
		r.leave(key, f)
		return git.Revision{}, fmt.Errorf("resolve %s: %w", git.RedactURL(src.URL), ctx.Err())
	}
}

// leave records that a caller stopped waiting for f; the last one to
// leave an unfinished flight cancels it, so no connection is opened for
// an answer nobody waits for.
func (r *Resolver) leave(key string, f *flight) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f.waiters--; f.waiters > 0 || isDone(f) {
		return
	}
	f.cancel()
	if r.flights[key] == f {
		delete(r.flights, key)
	}
}

// run does f's ls-remote (src's Egress limits its connections per host:
// LimitHosts).
func (r *Resolver) run(f *flight, src git.Source) {
	defer close(f.done)
	defer f.cancel()
	f.rev, f.err = r.lister.Resolve(f.ctx, src)
}

// dropOld forgets answers too old to share; r.mu is held. A poll takes
// answers asked within ShareFor, a trigger any asked after it: those are
// kept keepAnswers, long enough for the GitSyncs of one webhook to pass
// through the queue.
func (r *Resolver) dropOld(now time.Time) {
	for k, f := range r.flights {
		if f.started.Before(now.Add(-max(r.opts.ShareFor, keepAnswers))) && isDone(f) {
			delete(r.flights, k)
		}
	}
}

// failedBefore reports whether f started before t and failed: a failure
// is shared only within the window, so a trigger whose answer failed a
// while ago asks the remote again instead of failing too.
func failedBefore(f *flight, t time.Time) bool {
	return f.started.Before(t) && isDone(f) && f.err != nil
}

func isDone(f *flight) bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// resolveKey identifies what an ls-remote's answer depends on: the URL
// (userinfo included), the ref, and every credential the request presents
// (the Secret they were read from included, since errors name it). It is a
// digest, so the map holds no credential.
func resolveKey(src git.Source, origin string) string {
	h := sha256.New()
	field := func(b []byte) {
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	for _, s := range []string{src.URL, src.Ref.Branch, src.Ref.Tag, src.Ref.Semver, src.Ref.Commit, origin} {
		field([]byte(s))
	}
	if a := src.Auth; a != nil {
		field([]byte("auth"))
		for _, s := range []string{a.Username, a.Password, a.BearerToken} {
			field([]byte(s))
		}
		for _, b := range [][]byte{a.CAData, a.SSHPrivateKey, a.SSHPassphrase, a.KnownHosts} {
			field(b)
		}
		field([]byte(fmt.Sprint(a.InsecureSkipHostKeyCheck)))
	}
	return hex.EncodeToString(h.Sum(nil))
}
