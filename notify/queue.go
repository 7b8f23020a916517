package notify

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// DefaultTimeout bounds one send.
const DefaultTimeout = 10 * time.Second

// Item is one Event for one destination.
type Item struct {
	// Key is the GitSync the Event is about.
	Key types.NamespacedName
	// To is where it goes; each (Key, To) has its own order and bucket.
	To Destination
	// Event is what is sent.
	Event Event
	// Object is what the Event is about, for the caller's use (reading
	// the Secret as its account, recording events); never read here.
	Object runtime.Object
}

// Destination is a provider and the Secret (in the Key's namespace)
// holding its address; Index is the entry's place in the GitSync's list,
// for messages.
type Destination struct {
	Provider, Secret string
	Index            int
}

// QueueOptions configure a Queue.
type QueueOptions struct {
	// Send sends one Item (reading its Secret included) within ctx.
	// Required.
	Send func(ctx context.Context, it Item) error
	// Failed is told of every failed send and of every Item dropped while
	// its destination's bucket was empty. Optional.
	Failed func(it Item, err error)
	// Timeout bounds one send; zero means DefaultTimeout.
	Timeout time.Duration
	// Limit is each (Key, To)'s bucket; zero means DefaultLimit.
	Limit Limit
	// MaxQueued bounds the Items waiting per (Key, To); the oldest is
	// dropped. Zero means 4.
	MaxQueued int
	// Clock paces the buckets; nil means the real clock.
	Clock clock.Clock
	// Base is the context senders run in (the agent's lifetime); nil
	// means context.Background.
	Base func() context.Context
}

// Queue sends Items off the caller's path, in order per (Key, To), paced
// by a token bucket per (Key, To).
type Queue struct {
	opts QueueOptions

	mu    sync.Mutex
	lines map[line]*pending
}

type line struct {
	key types.NamespacedName
	to  Destination
}

type pending struct {
	bucket  *bucket
	items   []Item
	running bool
}

// DroppedError is given to QueueOptions.Failed for an Item dropped while
// its destination was rate-limited.
type DroppedError struct{}

func (DroppedError) Error() string {
	return "notification dropped: the destination's rate limit held newer notifications"
}

// NewQueue returns an empty queue sending with opts.Send.
func NewQueue(opts QueueOptions) *Queue {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Limit.Burst <= 0 {
		opts.Limit = DefaultLimit
	}
	if opts.MaxQueued <= 0 {
		opts.MaxQueued = 4
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Base == nil {
		opts.Base = context.Background
	}
	if opts.Failed == nil {
		opts.Failed = func(Item, error) {}
	}
	return &Queue{opts: opts, lines: map[line]*pending{}}
}

// Timeout is how long one send may take.
func (q *Queue) Timeout() time.Duration { return q.opts.Timeout }

// Add queues it and starts its line's sender when none runs.
func (q *Queue) Add(it Item) {
	q.mu.Lock()
	l := line{it.Key, it.To}
	p := q.lines[l]
	if p == nil {
		p = &pending{bucket: newBucket(q.opts.Limit, q.opts.Clock.Now())}
		q.lines[l] = p
	}
	var dropped []Item
	if len(p.items) == q.opts.MaxQueued {
		dropped, p.items = p.items[:1:1], p.items[1:]
	}
	p.items = append(p.items, it)
	if !p.running {
		p.running = true
		go q.send(p)
	}
	q.mu.Unlock()
	for _, d := range dropped {
		q.opts.Failed(d, DroppedError{})
	}
}

// send sends p's Items in order, waiting for its bucket, until none is
// left or the Base context ends.
func (q *Queue) send(p *pending) {
	ctx := q.opts.Base()
	for {
		q.mu.Lock()
		if len(p.items) == 0 || ctx.Err() != nil {
			p.items, p.running = nil, false
			q.mu.Unlock()
			return
		}
		if wait := p.bucket.take(q.opts.Clock.Now()); wait > 0 {
			q.mu.Unlock()
			select {
			case <-q.opts.Clock.After(wait):
			case <-ctx.Done():
			}
			continue
		}
		it := p.items[0]
		p.items = p.items[1:]
		q.mu.Unlock()
		if err := q.sendOne(ctx, it); err != nil {
			q.opts.Failed(it, err)
		}
	}
}

func (q *Queue) sendOne(ctx context.Context, it Item) error {
	ctx, cancel := context.WithTimeout(ctx, q.opts.Timeout)
	defer cancel()
	return q.opts.Send(ctx, it)
}

// Forget drops key's lines (a deleted GitSync, or one without
// notifications); a sender still running finishes its Items.
func (q *Queue) Forget(key types.NamespacedName) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for l := range q.lines {
		if l.key == key {
			delete(q.lines, l)
		}
	}
}
