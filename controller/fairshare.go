package controller

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	"gitsync.dev/gitsync/internal/fairshare"
)

// fairShare keeps one namespace from holding more than its share of the
// reconcile workers. A GitSync whose namespace is at its share returns its
// worker at once, without a requeue; it is added to the work queue again
// when a reconcile of its namespace ends (the Limiter's waiter), so it
// waits neither on a worker nor in a polling loop.
type fairShare struct {
	limiter *fairshare.Limiter[types.NamespacedName] // nil: no limit

	mu    sync.Mutex
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// newFairShare shares workers with at most share per namespace (see
// Options.NamespaceShare).
func newFairShare(workers, share int) *fairShare {
	f := &fairShare{}
	if share == 0 {
		share = fairshare.Share(workers)
	}
	if share > 0 && share < workers {
		f.limiter = fairshare.New(workers, share, f.wake)
	}
	return f
}

// source gives the waiters a way back into the work queue.
func (f *fairShare) source() crsource.Source {
	return crsource.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.queue = q
		return nil
	})
}

// acquire takes a worker slot of key's namespace, or records key as
// waiting for one.
func (f *fairShare) acquire(key types.NamespacedName) (release func(), ok bool) {
	if f.limiter == nil {
		return func() {}, true
	}
	return f.limiter.TryAcquire(key.Namespace, key)
}

// forget stops key waiting: its GitSync is gone.
func (f *fairShare) forget(key types.NamespacedName) {
	if f.limiter != nil {
		f.limiter.Forget(key)
	}
}

// waiting returns how many GitSyncs wait for their namespace's share.
func (f *fairShare) waiting() int {
	if f.limiter == nil {
		return 0
	}
	return f.limiter.Waiting()
}

func (f *fairShare) wake(key types.NamespacedName) {
	f.mu.Lock()
	q := f.queue
	f.mu.Unlock()
	if q != nil {
		q.Add(reconcile.Request{NamespacedName: key})
	}
}
