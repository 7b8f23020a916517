package controller

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// Sharder decides which GitSyncs this replica reconciles when several
// replicas share them (gitsync run --shards auto, internal/shard).
type Sharder interface {
	// Acquire reports whether this replica may reconcile key ("ns/name")
	// now. When it may, ctx is cancelled as soon as it may no longer, and
	// release must be called when the reconcile returns.
	Acquire(ctx context.Context, key string) (_ context.Context, release func(), ok bool)
	// Owns reports whether key is this replica's in the latest membership
	// it saw, though it may not be allowed to run it yet.
	Owns(key string) bool
}

// shareQueue is the reconciler's work queue as seen by a Sharder: the keys
// whose hands changed are added to it.
type shareQueue struct {
	mu      sync.Mutex
	sharder Sharder
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// ShareWith makes the reconciler run only the GitSyncs s lets it, and is
// called before the manager starts. Without it every GitSync is run.
func (r *GitSyncReconciler) ShareWith(s Sharder) {
	r.share.mu.Lock()
	defer r.share.mu.Unlock()
	r.share.sharder = s
}

// shareSource gives the Sharder's changes a way into the work queue.
func (r *GitSyncReconciler) shareSource() crsource.Source {
	return crsource.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		r.share.mu.Lock()
		defer r.share.mu.Unlock()
		r.share.queue = q
		return nil
	})
}

// acquire asks the Sharder, if any, whether this replica may reconcile key.
// A key it may not run and no longer owns loses its per-key memory here.
func (r *GitSyncReconciler) acquire(ctx context.Context, key types.NamespacedName) (context.Context, func(), bool) {
	r.share.mu.Lock()
	s := r.share.sharder
	r.share.mu.Unlock()
	if s == nil {
		return ctx, func() {}, true
	}
	ctx, release, ok := s.Acquire(ctx, key.String())
	if !ok && !s.Owns(key.String()) {
		r.forget(key)
	}
	return ctx, release, ok
}

// ShardKeys returns the keys of every GitSync in the cache: the keys a
// Sharder divides.
func (r *GitSyncReconciler) ShardKeys() []string {
	list := &v1.GitSyncList{}
	if err := r.client.List(r.baseContext(), list, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	keys := make([]string, len(list.Items))
	for i := range list.Items {
		keys[i] = list.Items[i].Namespace + "/" + list.Items[i].Name
	}
	return keys
}

// Requeue adds keys to the work queue: a Sharder's keys that changed hands.
func (r *GitSyncReconciler) Requeue(keys []string) {
	r.share.mu.Lock()
	q := r.share.queue
	r.share.mu.Unlock()
	if q == nil {
		return // not started yet: the initial list enqueues every key
	}
	for _, k := range keys {
		if nn, ok := ParseKey(k); ok {
			q.Add(reconcile.Request{NamespacedName: nn})
		}
	}
}

// Owns reports whether this replica should run key ("ns/name"): always,
// unless a Sharder gives it to another replica. The webhook receiver
// forwards the keys it does not own.
func (r *GitSyncReconciler) Owns(key string) bool {
	r.share.mu.Lock()
	s := r.share.sharder
	r.share.mu.Unlock()
	return s == nil || s.Owns(key)
}
