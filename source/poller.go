package source

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Resolver resolves a Source to a Revision; *Fetcher is the real one.
type Resolver interface {
	Resolve(ctx context.Context, src Source) (Revision, error)
}

var _ Resolver = (*Fetcher)(nil)

// PollerOptions configures a Poller.
type PollerOptions struct {
	// Resolver lists remotes. Required.
	Resolver Resolver
	// Enqueue receives the key of a target whose revision changed. It must
	// not block: it is meant to add to a workqueue. Required.
	Enqueue func(key string)
	// Clock drives the waits; tests pass a fake clock.
	Clock clock.Clock
	// DefaultInterval applies to targets that set no Interval.
	DefaultInterval time.Duration
	// Jitter spreads polls of many sources over time: each wait is
	// Interval × (1 + r) with r uniform in [0, Jitter).
	Jitter float64
	// MaxConcurrent bounds resolves in flight, so a burst of due sources does
	// not open hundreds of connections at once.
	MaxConcurrent int
}

// DefaultPollerOptions polls every minute with 10% jitter, 4 at a time, on
// the real clock.
func DefaultPollerOptions() PollerOptions {
	return PollerOptions{Clock: clock.RealClock{}, DefaultInterval: time.Minute, Jitter: 0.1, MaxConcurrent: 4}
}

// PollTarget is one source to poll.
type PollTarget struct {
	// Key is passed to Enqueue, e.g. "namespace/name" of the GitSync.
	Key string
	// Source is what to resolve.
	Source Source
	// Interval between polls; 0 means PollerOptions.DefaultInterval.
	Interval time.Duration
	// Last is the commit the caller already acted on. When empty, the first
	// poll only records a baseline and does not enqueue.
	Last string
}

// Poller resolves each target on its own jittered interval and enqueues the
// target's key only when the resolved revision changed (a new commit, another
// tag picked, or a ref that appeared or disappeared). Transient errors
// (network, server) change nothing; classified errors such as a deleted
// branch enqueue once, on the transition.
type Poller struct {
	opts PollerOptions
	sem  chan struct{}

	mu      sync.Mutex
	ctx     context.Context // nil until Run
	targets map[string]*pollTarget
	wg      sync.WaitGroup
}

type pollTarget struct {
	PollTarget
	cancel context.CancelFunc
	state  string // last observed commit, or error class
}

// NewPoller validates opts, defaulting zero fields from DefaultPollerOptions.
func NewPoller(opts PollerOptions) (*Poller, error) {
	if opts.Resolver == nil || opts.Enqueue == nil {
		return nil, errors.New("poller options invalid: Resolver and Enqueue are required")
	}
	def := DefaultPollerOptions()
	if opts.Clock == nil {
		opts.Clock = def.Clock
	}
	if opts.DefaultInterval <= 0 {
		opts.DefaultInterval = def.DefaultInterval
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = def.MaxConcurrent
	}
	if opts.Jitter < 0 {
		return nil, errors.New("poller options invalid: negative Jitter")
	}
	return &Poller{opts: opts, sem: make(chan struct{}, opts.MaxConcurrent), targets: map[string]*pollTarget{}}, nil
}

// Set adds a target or replaces the one with the same key. A replaced target
// keeps its observed revision when its Source is unchanged.
func (p *Poller) Set(t PollTarget) {
	p.mu.Lock()
	defer p.mu.Unlock()
	nt := &pollTarget{PollTarget: t}
	if t.Last != "" {
		nt.state = t.Last
	}
	if old, ok := p.targets[t.Key]; ok {
		if old.cancel != nil {
			old.cancel()
		}
		if old.Source.URL == t.Source.URL && old.Source.Ref == t.Source.Ref && t.Last == "" {
			nt.state = old.state
		}
	}
	p.targets[t.Key] = nt
	if p.ctx != nil {
		p.start(nt)
	}
}

// Remove stops polling key.
func (p *Poller) Remove(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.targets[key]; ok {
		if t.cancel != nil {
			t.cancel()
		}
		delete(p.targets, key)
	}
}

// Run polls until ctx is done, then waits for in-flight polls to finish.
func (p *Poller) Run(ctx context.Context) error {
	p.mu.Lock()
	if p.ctx != nil {
		p.mu.Unlock()
		return errors.New("poller already running")
	}
	p.ctx = ctx
	for _, t := range p.targets {
		p.start(t)
	}
	p.mu.Unlock()
	<-ctx.Done()
	p.wg.Wait()
	return nil
}

// start runs t's loop; p.mu is held.
func (p *Poller) start(t *pollTarget) {
	ctx, cancel := context.WithCancel(p.ctx)
	t.cancel = cancel
	p.wg.Go(func() { p.loop(ctx, t) })
}

func (p *Poller) loop(ctx context.Context, t *pollTarget) {
	interval := t.Interval
	if interval <= 0 {
		interval = p.opts.DefaultInterval
	}
	for {
		timer := p.opts.Clock.NewTimer(jittered(interval, p.opts.Jitter, rand.Float64()))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
		p.poll(ctx, t)
	}
}

// poll resolves t once and enqueues its key if the observed state changed.
func (p *Poller) poll(ctx context.Context, t *pollTarget) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	rev, err := p.opts.Resolver.Resolve(ctx, t.Source)
	<-p.sem
	if ctx.Err() != nil {
		return
	}
	state := rev.Commit
	if err != nil {
		class := gitErrClass(err)
		if class == nil {
			return // transient: keep the last state, try again next interval
		}
		state = "error: " + class.Error()
	}
	p.mu.Lock()
	prev := t.state
	t.state = state
	p.mu.Unlock()
	if prev != "" && prev != state {
		p.opts.Enqueue(t.Key)
	}
}

// jittered returns interval × (1 + r × jitter) for r in [0, 1).
func jittered(interval time.Duration, jitter, r float64) time.Duration {
	return interval + time.Duration(float64(interval)*jitter*r)
}
