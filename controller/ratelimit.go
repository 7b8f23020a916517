package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// backoff is the work queue's rate limiter: per-key exponential backoff
// after transient failures, capped per GitSync by spec.retryInterval.
type backoff struct {
	inner workqueue.TypedRateLimiter[reconcile.Request]
	mu    sync.Mutex
	caps  map[types.NamespacedName]time.Duration
}

var _ workqueue.TypedRateLimiter[reconcile.Request] = (*backoff)(nil)

func newBackoff(min, max time.Duration) *backoff {
	return &backoff{
		inner: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](min, max),
		caps:  map[types.NamespacedName]time.Duration{},
	}
}

// When returns the next retry delay for req: the exponential delay, at most
// the cap last recorded for req.
func (b *backoff) When(req reconcile.Request) time.Duration {
	d := b.inner.When(req)
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.caps[req.NamespacedName]; ok && c > 0 && d > c {
		return c
	}
	return d
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
