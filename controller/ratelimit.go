package controller

import (
	"math/rand/v2"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Limits bound how hard the agent retries and how many connections it
// opens to one Git host, whatever the number of GitSyncs. Without them,
// a thousand GitSyncs failing at once (their Git host down, an apiserver
// restart) retry in lockstep, each on its own exponential schedule.
type Limits struct {
	// RetryQPS and RetryBurst are a token bucket shared by every retry
	// after a failure: a failed GitSync waits for the later of its own
	// exponential backoff and its turn in the bucket. It spreads a mass
	// failure's retries over time instead of sending them together.
	// RetryQPS <= 0 turns the bucket off.
	RetryQPS   float64
	RetryBurst int
	// RetryJitter is the largest fraction added at random to a retry's
	// delay, so GitSyncs that failed together do not retry together.
	RetryJitter float64
	// GitHostConcurrency is how many connections the agent's Git traffic
	// (ls-remotes and fetches) may hold open to one host address at once;
	// more wait for one to close (remote.LimitHosts). It bounds what a dead or
	// hanging host costs (connections held until the request's timeout)
	// and what all GitSyncs together send to one host. <= 0: no limit.
	GitHostConcurrency int
	// ResolveShareFor is how long one ls-remote's answer serves other
	// GitSyncs following the same URL and ref with the same credentials
	// when they poll (a trigger, such as a webhook, only takes an answer
	// asked after it). 0 shares only resolves in flight.
	ResolveShareFor time.Duration
}

// DefaultLimits retries at most 10 GitSyncs per second after a burst of
// 100, with up to 20 % jitter; 4 connections per Git host address at once
// (the default --concurrent); answers shared for 2 seconds.
func DefaultLimits() Limits {
	return Limits{RetryQPS: 10, RetryBurst: 100, RetryJitter: 0.2, GitHostConcurrency: 4, ResolveShareFor: 2 * time.Second}
}

// backoff is the work queue's rate limiter: per-key exponential backoff
// after transient failures, capped per GitSync by spec.retryInterval, and
// a global token bucket every retry takes a token from, plus jitter.
type backoff struct {
	inner  workqueue.TypedRateLimiter[reconcile.Request]
	global *rate.Limiter // nil: no bucket
	jitter float64
	clock  clock.PassiveClock
	mu     sync.Mutex
	caps   map[types.NamespacedName]time.Duration
	rand   func() float64
}

var _ workqueue.TypedRateLimiter[reconcile.Request] = (*backoff)(nil)

func newBackoff(minDelay, maxDelay time.Duration, l Limits, clk clock.PassiveClock) *backoff {
	b := &backoff{
		inner:  workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](minDelay, maxDelay),
		jitter: max(l.RetryJitter, 0),
		clock:  clk,
		caps:   map[types.NamespacedName]time.Duration{},
		rand:   rand.Float64,
	}
	if l.RetryQPS > 0 {
		b.global = rate.NewLimiter(rate.Limit(l.RetryQPS), max(l.RetryBurst, 1))
	}
	return b
}

// When returns the next retry delay for req: the exponential delay (at
// most the cap last recorded for req) or, if later, req's turn in the
// global bucket, stretched by the jitter. A cap never shortens the wait
// for a token, which is reserved either way.
func (b *backoff) When(req reconcile.Request) time.Duration {
	d := b.inner.When(req)
	b.mu.Lock()
	if c, ok := b.caps[req.NamespacedName]; ok && c > 0 && d > c {
		d = c
	}
	b.mu.Unlock()
	if b.global != nil {
		now := b.clock.Now()
		d = max(d, b.global.ReserveN(now, 1).DelayFrom(now))
	}
	return d + time.Duration(b.rand()*b.jitter*float64(d))
}

func (b *backoff) Forget(req reconcile.Request)          { b.inner.Forget(req) }
func (b *backoff) NumRequeues(req reconcile.Request) int { return b.inner.NumRequeues(req) }

// setCap records the largest retry delay for key; zero removes it.
func (b *backoff) setCap(key types.NamespacedName, c time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c <= 0 {
		delete(b.caps, key)
		return
	}
	b.caps[key] = c
}
