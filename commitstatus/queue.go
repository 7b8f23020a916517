package commitstatus

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Report is one status for one commit, and where it goes.
type Report struct {
	// Key names what the report is about (a GitSync): each key has its
	// own queue and memory.
	Key types.NamespacedName
	// To is where it is posted.
	To Destination
	// Status is what is posted.
	Status Status
	// Object is what the report is about, for the caller's events; the
	// queue hands it back and never reads it.
	Object runtime.Object
}

// Destination is where a report is posted: the host's API flavour, the
// repository, the API address ("" derives it) and the Secret (in the
// Key's namespace) holding the credentials.
type Destination struct {
	Provider, RepoURL, Address, Secret string
}

// same reports whether o says what r says, to the same place: a failure is
// new when its reason changed, other states only when their state did (a
// host such as GitLab refuses to set a state a status already has).
func (r Report) same(o Report) bool {
	if r.To != o.To || r.Key != o.Key {
		return false
	}
	a, b := r.Status, o.Status
	return a.Commit != "" && a.Commit == b.Commit && a.State == b.State && a.Context == b.Context &&
		(a.State != Failure || a.Description == b.Description)
}

// QueueOptions configure a Queue.
type QueueOptions struct {
	// Post sends one report (reading its credentials included) within ctx,
	// which Timeout bounds. Required.
	Post func(ctx context.Context, r Report) error
	// Failed is told of every failed post; first is set the first time
	// this report failed (for one event per report). Optional.
	Failed func(r Report, err error, first bool)
	// Timeout bounds one post; zero means DefaultTimeout.
	Timeout time.Duration
	// MaxQueued bounds a key's queue while its host is slow: the newest
	// reports are the ones worth sending. Zero means 8.
	MaxQueued int
	// Base is the context senders run in: the agent's lifetime. A sender
	// stops when it ends. Nil means context.Background.
	Base func() context.Context
}

// Queue sends reports without holding whoever queues them: reports are
// queued per key, and one goroutine per key sends them in order, each
// bounded by QueueOptions.Timeout and the Base context. It remembers the
// last report queued per key and drops one that says the same, so a caller
// may queue on every pass and posts only on change. A failed post is tried
// again when the same report is next queued, unless a newer one was queued
// meanwhile.
type Queue struct {
	opts QueueOptions

	mu    sync.Mutex
	byKey map[types.NamespacedName]*reports
}

// reports is one key's memory and queue.
type reports struct {
	last    Report // the last report queued
	queue   []Report
	running bool
	failed  Report // the last report whose post failed
}

// NewQueue returns an empty queue posting with opts.Post.
func NewQueue(opts QueueOptions) *Queue {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxQueued <= 0 {
		opts.MaxQueued = 8
	}
	if opts.Base == nil {
		opts.Base = context.Background
	}
	if opts.Failed == nil {
		opts.Failed = func(Report, error, bool) {}
	}
	return &Queue{opts: opts, byKey: map[types.NamespacedName]*reports{}}
}

// Timeout is how long one post may take.
func (q *Queue) Timeout() time.Duration { return q.opts.Timeout }

// LastCommit returns the commit of the last report queued for key.
func (q *Queue) LastCommit(key types.NamespacedName) (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := q.byKey[key]
	if k == nil || k.last.Status.Commit == "" {
		return "", false
	}
	return k.last.Status.Commit, true
}

// Add queues r unless it says what the last report queued for its key
// said, and starts the key's sender when none runs.
func (q *Queue) Add(r Report) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := q.byKey[r.Key]
	if k == nil {
		k = &reports{}
		q.byKey[r.Key] = k
	}
	if r.same(k.last) {
		return
	}
	k.last = r
	if len(k.queue) == q.opts.MaxQueued {
		k.queue = k.queue[1:]
	}
	k.queue = append(k.queue, r)
	if !k.running {
		k.running = true
		go q.send(k)
	}
}

// send posts k's reports in order until its queue is empty or the Base
// context ends.
func (q *Queue) send(k *reports) {
	ctx := q.opts.Base()
	for {
		q.mu.Lock()
		if len(k.queue) == 0 || ctx.Err() != nil {
			k.queue, k.running = nil, false
			q.mu.Unlock()
			return
		}
		r := k.queue[0]
		k.queue = k.queue[1:]
		q.mu.Unlock()
		err := q.post(ctx, r)
		q.mu.Lock()
		first := err != nil && !r.same(k.failed)
		switch {
		case err == nil:
			k.failed = Report{}
		case r.same(k.last):
			// Nothing newer is queued: let the next Add try again.
			k.failed, k.last = r, Report{}
		default:
			k.failed = r
		}
		q.mu.Unlock()
		if err != nil {
			q.opts.Failed(r, err, first)
		}
	}
}

func (q *Queue) post(ctx context.Context, r Report) error {
	ctx, cancel := context.WithTimeout(ctx, q.opts.Timeout)
	defer cancel()
	return q.opts.Post(ctx, r)
}

// Forget drops key's memory; a sender still running finishes its queue.
func (q *Queue) Forget(key types.NamespacedName) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.byKey, key)
}
