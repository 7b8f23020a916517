package source

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// countingResolver wraps the real Fetcher to count finished resolves per key
// (by URL), so the test knows when a poll has happened.
type countingResolver struct {
	f     *Fetcher
	mu    sync.Mutex
	polls map[string]int
	total atomic.Int64
}

func (r *countingResolver) Resolve(ctx context.Context, src Source) (Revision, error) {
	rev, err := r.f.Resolve(ctx, src)
	r.mu.Lock()
	r.polls[src.URL]++
	r.mu.Unlock()
	r.total.Add(1)
	return rev, err
}

type pollerHarness struct {
	t        *testing.T
	clk      *clocktesting.FakeClock
	res      *countingResolver
	p        *Poller
	targets  int
	mu       sync.Mutex
	enqueued []string
}

func newPollerHarness(t *testing.T, targets ...PollTarget) *pollerHarness {
	h := &pollerHarness{t: t, clk: clocktesting.NewFakeClock(time.Unix(0, 0)), targets: len(targets)}
	h.res = &countingResolver{f: newTestFetcher(t), polls: map[string]int{}}
	opts := DefaultPollerOptions()
	opts.Resolver, opts.Clock, opts.Jitter = h.res, h.clk, 0.1
	opts.Enqueue = func(key string) { h.mu.Lock(); h.enqueued = append(h.enqueued, key); h.mu.Unlock() }
	p, err := NewPoller(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	for _, tg := range targets {
		p.Set(tg)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	h.settle(0)
	return h
}

// step advances the fake clock and waits until the expected number of
// resolves in total have finished and every target is waiting again, which
// means any enqueue of this round has happened. No wall-clock timing.
func (h *pollerHarness) step(d time.Duration, wantTotal int64) {
	h.t.Helper()
	h.clk.Step(d)
	h.settle(wantTotal)
}

func (h *pollerHarness) settle(wantTotal int64) {
	for h.res.total.Load() < wantTotal || h.clk.Waiters() < h.targets {
		runtime.Gosched()
	}
}

func (h *pollerHarness) takeEnqueued() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.enqueued
	h.enqueued = nil
	return out
}

func TestPollerEnqueuesOnlyOnChange(t *testing.T) {
	root := t.TempDir()
	repo := newTestRepo(t, root, "app")
	first := repo.commit("one", map[string]string{"a.yaml": "a: 1\n"})
	repo.git("branch", "feature")
	srv := newGitHTTPServer(t, root, "", "")
	mainSrc := Source{URL: srv.URL + "/app", Ref: Ref{Branch: "main"}, Auth: srv.auth()}
	featSrc := Source{URL: srv.URL + "/app", Ref: Ref{Branch: "feature"}, Auth: srv.auth()}
	h := newPollerHarness(t,
		PollTarget{Key: "ns/main", Source: mainSrc, Interval: time.Minute, Last: first},
		PollTarget{Key: "ns/feature", Source: featSrc, Interval: time.Minute}, // baseline on first poll
	)
	period := 66 * time.Second // Interval × (1 + Jitter): every target fires once per step

	steps := []struct {
		name   string
		change func()
		want   []string
	}{
		{"unchanged, baseline recorded", func() {}, nil},
		{"still unchanged", func() {}, nil},
		{"push to main", func() { repo.commit("two", map[string]string{"a.yaml": "a: 2\n"}) }, []string{"ns/main"}},
		{"unchanged after push", func() {}, nil},
		{"feature deleted", func() { repo.git("branch", "-D", "feature") }, []string{"ns/feature"}},
		{"feature still deleted", func() {}, nil},
		{"feature recreated", func() { repo.git("branch", "feature") }, []string{"ns/feature"}},
	}
	var total int64
	for _, s := range steps {
		s.change()
		total += 2
		h.step(period, total)
		if diff := cmp.Diff(s.want, h.takeEnqueued()); diff != "" {
			t.Errorf("%s: enqueued (-want +got):\n%s", s.name, diff)
		}
	}
}

func TestPollerPerTargetInterval(t *testing.T) {
	root := t.TempDir()
	repo := newTestRepo(t, root, "app")
	repo.commit("one", map[string]string{"a.yaml": "a: 1\n"})
	fast := Source{URL: repo.dir, Ref: Ref{Branch: "main"}}
	slow := Source{URL: "file://" + repo.dir, Ref: Ref{Branch: "main"}}
	h := newPollerHarness(t,
		PollTarget{Key: "fast", Source: fast, Interval: time.Minute},
		PollTarget{Key: "slow", Source: slow, Interval: 5 * time.Minute},
	)
	// Five steps of 1.1 minutes: fast fires every step, slow (5–5.5 minutes)
	// exactly once, on the last step.
	for i := range 5 {
		want := int64(i + 1)
		if i == 4 {
			want++
		}
		h.step(66*time.Second, want)
	}
	h.res.mu.Lock()
	got := map[string]int{"fast": h.res.polls[fast.URL], "slow": h.res.polls[slow.URL]}
	h.res.mu.Unlock()
	if diff := cmp.Diff(map[string]int{"fast": 5, "slow": 1}, got); diff != "" {
		t.Errorf("polls (-want +got):\n%s", diff)
	}
	if got := h.takeEnqueued(); len(got) != 0 {
		t.Errorf("enqueued %v with no change", got)
	}
}

func TestPollerRemoveStopsPolling(t *testing.T) {
	root := t.TempDir()
	repo := newTestRepo(t, root, "app")
	repo.commit("one", map[string]string{"a.yaml": "a: 1\n"})
	h := newPollerHarness(t, PollTarget{Key: "k", Source: Source{URL: repo.dir, Ref: Ref{Branch: "main"}}, Interval: time.Minute})
	h.step(66*time.Second, 1)
	h.p.Remove("k")
	h.targets = 0
	for h.clk.Waiters() > 0 {
		runtime.Gosched()
	}
	repo.commit("two", map[string]string{"a.yaml": "a: 2\n"})
	h.clk.Step(10 * time.Minute)
	if got := h.res.total.Load(); got != 1 {
		t.Errorf("resolves after Remove = %d, want 1", got)
	}
	if got := h.takeEnqueued(); len(got) != 0 {
		t.Errorf("enqueued %v after Remove", got)
	}
}

func TestJittered(t *testing.T) {
	tests := []struct {
		name     string
		interval time.Duration
		jitter   float64
		r        float64
		want     time.Duration
	}{
		{"no jitter", time.Minute, 0, 0.9, time.Minute},
		{"low end", time.Minute, 0.1, 0, time.Minute},
		{"high end", time.Minute, 0.1, 0.999, time.Minute + 5994*time.Millisecond},
		{"half", 10 * time.Second, 0.5, 0.5, 12500 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, jittered(tc.interval, tc.jitter, tc.r)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
