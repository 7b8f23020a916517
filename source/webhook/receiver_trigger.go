package webhook

import (
	"slices"
	"sync"
)

// Trigger coalesces wake-ups: it is a set of keys waiting to be fetched plus
// a signal that the set is not empty. Enqueuing a key that is already waiting
// does nothing, so a burst of N pushes for one source costs one fetch. Use
// Trigger.Enqueue as Options.Enqueue where no workqueue is at hand
// (the CLI, tests); the controller's workqueue dedupes the same way.
type Trigger struct {
	mu      sync.Mutex
	pending map[string]struct{}
	ready   chan struct{}
}

// NewTrigger returns an empty Trigger.
func NewTrigger() *Trigger {
	return &Trigger{pending: map[string]struct{}{}, ready: make(chan struct{}, 1)}
}

// Enqueue marks key as waiting. It never blocks.
func (t *Trigger) Enqueue(key string) {
	t.mu.Lock()
	t.pending[key] = struct{}{}
	t.mu.Unlock()
	select {
	case t.ready <- struct{}{}:
	default: // a signal is already pending
	}
}

// Ready receives a value after one or more Enqueue calls; then call Take.
func (t *Trigger) Ready() <-chan struct{} { return t.ready }

// Take returns the waiting keys, sorted, and empties the set. A key enqueued
// after Take is waiting again.
func (t *Trigger) Take() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := make([]string, 0, len(t.pending))
	for k := range t.pending {
		keys = append(keys, k)
	}
	clear(t.pending)
	slices.Sort(keys)
	return keys
}

// Len is the number of keys waiting.
func (t *Trigger) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending)
}
