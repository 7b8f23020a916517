package fairshare

import (
	"context"
	"slices"
	"sync"
)

// Share is the most slots one owner may hold of total: half, at least one.
func Share(total int) int { return max(1, total/2) }

// Limiter shares Total slots among owners. W identifies a waiter refused
// by TryAcquire (a work-queue key).
type Limiter[W comparable] struct {
	total, share int
	onFree       func(W)

	mu      sync.Mutex
	inUse   int
	held    map[string]int
	waiting []waiter[W]    // in arrival order, each waiter once
	blocked map[string]int // Acquire calls waiting, by owner
	freed   chan struct{}
}

type waiter[W comparable] struct {
	owner string
	w     W
}

// New shares total slots (at least 1), at most share (1..total; 0 means
// Share(total)) per owner; onFree, which may be nil, receives each refused
// waiter once a slot it may take frees. It is called without the Limiter's
// lock held.
func New[W comparable](total, share int, onFree func(W)) *Limiter[W] {
	total = max(1, total)
	if share <= 0 {
		share = Share(total)
	}
	share = min(share, total)
	return &Limiter[W]{total: total, share: share, onFree: onFree, held: map[string]int{}, blocked: map[string]int{}, freed: make(chan struct{})}
}

// Total is the number of slots shared.
func (l *Limiter[W]) Total() int { return l.total }

// TryAcquire takes a slot for owner when one is free and owner is under its
// share; else it records w as waiting and returns false. A waiter that gets
// a slot stops waiting. release must be called once the slot is done.
func (l *Limiter[W]) TryAcquire(owner string, w W) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop(w)
	if !l.canTake(owner) {
		l.waiting = append(l.waiting, waiter[W]{owner: owner, w: w})
		return nil, false
	}
	l.take(owner)
	return l.releaser(owner), true
}

// Acquire blocks until owner may take a slot, or ctx ends.
func (l *Limiter[W]) Acquire(ctx context.Context, owner string) (release func(), err error) {
	for {
		l.mu.Lock()
		if l.canTake(owner) {
			l.take(owner)
			l.mu.Unlock()
			return l.releaser(owner), nil
		}
		freed := l.freed
		l.blocked[owner]++
		l.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-freed:
		}
		l.mu.Lock()
		if l.blocked[owner]--; l.blocked[owner] == 0 {
			delete(l.blocked, owner)
		}
		l.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// Forget stops w waiting (its work went away).
func (l *Limiter[W]) Forget(w W) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop(w)
}

// Waiting returns how many waiters wait for a slot: refused by TryAcquire,
// or blocked in Acquire.
func (l *Limiter[W]) Waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.waiting)
	for _, b := range l.blocked {
		n += b
	}
	return n
}

// Held returns the slots owner holds.
func (l *Limiter[W]) Held(owner string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[owner]
}

// canTake reports whether owner may take a slot now: a free one, under its
// share; or past its share while nobody else waits and one slot stays free
// besides (so an owner alone keeps all but one slot busy, and another
// owner's first work always finds that one free).
func (l *Limiter[W]) canTake(owner string) bool {
	switch {
	case l.inUse >= l.total:
		return false
	case l.held[owner] < l.share:
		return true
	}
	return l.inUse < l.total-1 && !l.othersWait(owner)
}

// othersWait reports whether an owner other than owner waits for a slot.
func (l *Limiter[W]) othersWait(owner string) bool {
	for _, x := range l.waiting {
		if x.owner != owner {
			return true
		}
	}
	for o := range l.blocked {
		if o != owner {
			return true
		}
	}
	return false
}

func (l *Limiter[W]) take(owner string) {
	l.inUse++
	l.held[owner]++
}

func (l *Limiter[W]) drop(w W) {
	l.waiting = slices.DeleteFunc(l.waiting, func(x waiter[W]) bool { return x.w == w })
}

// releaser gives the slot back once, however often it is called, and hands
// the first waiter that may now take a slot to onFree.
func (l *Limiter[W]) releaser(owner string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			next, ok := l.release(owner)
			if ok && l.onFree != nil {
				l.onFree(next)
			}
		})
	}
}

func (l *Limiter[W]) release(owner string) (next W, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inUse--
	if l.held[owner]--; l.held[owner] == 0 {
		delete(l.held, owner)
	}
	close(l.freed)
	l.freed = make(chan struct{})
	for i, x := range l.waiting {
		if l.canTake(x.owner) {
			l.waiting = slices.Delete(l.waiting, i, i+1)
			return x.w, true
		}
	}
	return next, false
}
