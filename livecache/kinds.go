package livecache

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// InformerSyncTimeout bounds how long Prepare waits for the first listing
// of a kind into a watch cache. A cache Get of a kind without an informer
// starts one and blocks until it has listed, which never happens when
// listing is refused: that wait held a worker for spec.timeout.
const InformerSyncTimeout = 30 * time.Second

// Watcher is the part of a controller Kinds registers watches with
// (controller.Controller is one).
type Watcher interface {
	Watch(src source.Source) error
}

// Kinds are the kinds GitSyncs applied, per watch cache (the local
// cluster's or a remote one's): whether each kind's informer has synced
// (Prepare), and whether the controller watches it (Watch). One informer
// per kind and cache, started on first use, serves the appliers, the
// health checks and the watch alike.
type Kinds struct {
	ctrl      Watcher
	handler   handler.TypedEventHandler[*unstructured.Unstructured, reconcile.Request]
	predicate predicate.TypedPredicate[*unstructured.Unstructured]

	mu      sync.Mutex
	watched map[kindKey]bool
	ready   map[kindKey]bool
	// listing holds the informers of the kinds Start left listing, whose
	// first listing a goroutine waits for; stuck, those whose listing did
	// not end within InformerSyncTimeout, until a Start reports it.
	listing map[kindKey]cache.Informer
	stuck   map[kindKey]error
	// live holds the kinds whose drift watch delivers events (its handler
	// is registered on a listed informer); after, for each kind whose
	// watch is on its way there, what AfterListing asked to call once it
	// is.
	live  map[kindKey]bool
	after map[kindKey]*awaited
}

// awaited is one drift watch on its way to delivering events, and what to
// call when it does.
type awaited struct{ fns []func() }

// kindKey is one kind in one cache.
type kindKey struct {
	cache cache.Cache
	gvk   schema.GroupVersionKind
}

// NewKinds returns Kinds whose watches map events of managed objects with
// h, filtered by p, into ctrl's queue: who is requeued and when is the
// caller's decision.
func NewKinds(ctrl Watcher, h handler.TypedEventHandler[*unstructured.Unstructured, reconcile.Request], p predicate.TypedPredicate[*unstructured.Unstructured]) *Kinds {
	return &Kinds{ctrl: ctrl, handler: h, predicate: p, watched: map[kindKey]bool{}, ready: map[kindKey]bool{},
		listing: map[kindKey]cache.Informer{}, stuck: map[kindKey]error{}, live: map[kindKey]bool{}, after: map[kindKey]*awaited{}}
}

// ForbiddenError is a Prepare that found kinds the agent may not list or
// watch: retrying will not help until its RBAC changes. Errs name each
// kind with the apiserver's words (verb, resource, user).
type ForbiddenError struct{ Errs []error }

func (e *ForbiddenError) Error() string   { return oneLine(e.Errs).Error() }
func (e *ForbiddenError) Unwrap() []error { return e.Errs }

// Prepare makes every kind of objs readable from c before anything is
// applied: each kind not read yet is first listed and watched once with
// probe (the agent's own identity, the one c lists with), so a refusal is
// reported at once and no informer is started to retry it forever; then
// its informer is started and waited for, at most InformerSyncTimeout,
// and stopped if it does not sync. A nil probe (a remote cluster) skips
// the first step. Kinds that are not served are left to the applier, which
// skips them and says so. A refusal is a *ForbiddenError; other failures
// are returned joined on one line and may pass on a retry.
func (k *Kinds) Prepare(ctx context.Context, c cache.Cache, probe client.WithWatch, objs []*unstructured.Unstructured) error {
	_, err := k.prepare(ctx, c, probe, objs, true)
	return err
}

// Start is Prepare without waiting for first listings: each kind of objs
// not read yet is probed as Prepare probes it (refusals are the same
// errors) and its informer started, and listing says whether one of them
// has not listed yet. A goroutine waits for each such listing, at most
// InformerSyncTimeout; one that does not end is an error of the next Start
// of its kind. Meanwhile a Reader answers the sync's reads of those kinds.
func (k *Kinds) Start(ctx context.Context, c cache.Cache, probe client.WithWatch, objs []*unstructured.Unstructured) (listing bool, err error) {
	return k.prepare(ctx, c, probe, objs, false)
}

func (k *Kinds) prepare(ctx context.Context, c cache.Cache, probe client.WithWatch, objs []*unstructured.Unstructured, block bool) (bool, error) {
	if k == nil || c == nil {
		return false, nil
	}
	var kinds []schema.GroupVersionKind
	var stuck []error
	listing := false
	seen := map[schema.GroupVersionKind]bool{}
	k.mu.Lock()
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		key := kindKey{cache: c, gvk: gvk}
		switch {
		case seen[gvk] || k.listedLocked(key):
			continue
		case k.stuck[key] != nil:
			stuck = append(stuck, k.stuck[key])
			delete(k.stuck, key)
		case k.listing[key] != nil && !block:
			listing = true // probed and started by an earlier Start
			continue
		}
		seen[gvk] = true
		kinds = append(kinds, gvk)
	}
	k.mu.Unlock()
	// Kinds are made readable side by side: each costs a few requests and
	// its first listing, and a start-up over many GitSyncs waits for all.
	denied, failed := make([]error, len(kinds)), make([]error, len(kinds))
	lists := make([]bool, len(kinds))
	var g errgroup.Group
	g.SetLimit(prepareParallel)
	for i, gvk := range kinds {
		g.Go(func() error {
			lists[i], denied[i], failed[i] = k.prepareKind(ctx, kindKey{cache: c, gvk: gvk}, probe, block)
			return nil
		})
	}
	_ = g.Wait()
	listing = listing || slices.Contains(lists, true)
	denied, failed = slices.DeleteFunc(denied, isNil), slices.DeleteFunc(append(failed, stuck...), isNil)
	switch {
	case len(denied) > 0:
		return listing, &ForbiddenError{Errs: denied}
	case len(failed) == 1:
		return listing, failed[0]
	case len(failed) > 1:
		return listing, oneLine(failed)
	}
	return listing, nil
}

// prepareParallel bounds the kinds one Prepare makes readable at once.
const prepareParallel = 8

func isNil(err error) bool { return err == nil }

// prepareKind probes and starts one kind's informer (Prepare): a refusal
// is returned as denied, any other failure as failed.
func (k *Kinds) prepareKind(ctx context.Context, key kindKey, probe client.WithWatch, block bool) (listing bool, denied, failed error) {
	gvk := key.gvk
	// GitSyncs are cached as the manager's options say (namespaces,
	// shard), which the probe does not know; the agent reads them anyway.
	if probe != nil && gvk.GroupKind() != v1.GroupVersion.WithKind("GitSync").GroupKind() {
		err := probeRead(ctx, probe, gvk)
		switch {
		case err == nil:
		case meta.IsNoMatchError(err), apierrors.IsNotFound(err):
			return false, nil, nil
		case apierrors.IsForbidden(err):
			k.drop(ctx, key)
			return false, fmt.Errorf("the agent cannot read %s into its watch cache: %w", gvk.Kind, err), nil
		default:
			return false, nil, fmt.Errorf("%s read check failed: %w", gvk.Kind, err)
		}
	}
	listing, err := k.startInformer(ctx, key, block)
	return listing, nil, err
}

// Watch starts watching every kind of objs in c that is not watched yet.
func (k *Kinds) Watch(_ context.Context, c cache.Cache, objs []*unstructured.Unstructured) error {
	if k == nil || c == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, obj := range objs {
		key := kindKey{cache: c, gvk: obj.GroupVersionKind()}
		if k.watched[key] {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(key.gvk)
		src := source.Kind(c, u, k.handler, k.predicate)
		if err := k.ctrl.Watch(src); err != nil {
			return fmt.Errorf("watch %s for drift: %w", key.gvk.Kind, err)
		}
		k.watched[key] = true
		a := &awaited{}
		k.after[key] = a
		go k.awaitLive(key, src, a)
	}
	return nil
}

// awaitLive waits until src, key's drift watch, delivers events, marks key
// live and calls what AfterListing left for it (also when the wait fails:
// the GitSyncs then reconcile and meet whatever keeps the kind from being
// watched).
func (k *Kinds) awaitLive(key kindKey, src source.SyncingSource, a *awaited) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*InformerSyncTimeout)
	defer cancel()
	err := src.WaitForSync(ctx)
	k.mu.Lock()
	if k.after[key] == a { // not dropped (and watched again) meanwhile
		delete(k.after, key)
		k.live[key] = err == nil
	}
	fns := a.fns
	a.fns = nil
	k.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// AfterListing calls fn once the drift watch of each kind of objs in c
// that does not deliver events yet does (its informer has listed and its
// handler is registered), once per such kind, and says whether there was
// one. A sync that wrote or read kinds whose watch was not live yet asks
// to be reconciled again then, from the cache: a change made before the
// watch's handler was registered comes with the listing, which no watch
// event reports.
func (k *Kinds) AfterListing(c cache.Cache, objs []*unstructured.Unstructured, fn func()) (pending bool) {
	if k == nil || c == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	seen := map[schema.GroupVersionKind]bool{}
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		key := kindKey{cache: c, gvk: gvk}
		if seen[gvk] || k.live[key] {
			continue
		}
		seen[gvk] = true
		if a := k.after[key]; a != nil {
			a.fns = append(a.fns, fn)
			pending = true
		}
	}
	return pending
}

// probeRead lists one managed object of gvk and opens a watch from there,
// as the cache's informer would.
func probeRead(ctx context.Context, c client.WithWatch, gvk schema.GroupVersionKind) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, list, client.Limit(1), client.MatchingLabelsSelector{Selector: ManagedSelector()}); err != nil {
		return err
	}
	w, err := c.Watch(ctx, list, &client.ListOptions{
		LabelSelector: ManagedSelector(),
		Raw:           &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()},
	})
	if err != nil {
		return err
	}
	w.Stop()
	return nil
}

// startInformer starts key's informer and, with block, waits until it has
// listed; without, a goroutine does (listing is then true).
func (k *Kinds) startInformer(ctx context.Context, key kindKey, block bool) (listing bool, err error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(key.gvk)
	inf, err := key.cache.GetInformer(ctx, u, cache.BlockUntilSynced(false))
	if err != nil {
		// Not served, or discovery failed: the applier meets the same
		// error at once and reports it per object.
		return false, nil
	}
	if block || inf.HasSynced() {
		return false, k.waitListed(ctx, key, inf)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.listing[key] != nil {
		return true, nil
	}
	k.listing[key] = inf
	go func() {
		err := k.waitListed(context.WithoutCancel(ctx), key, inf)
		k.mu.Lock()
		defer k.mu.Unlock()
		delete(k.listing, key)
		if err != nil {
			k.stuck[key] = err
		}
	}()
	return true, nil
}

// waitListed waits, at most InformerSyncTimeout, until inf (key's) has
// listed, and marks key ready; one that does not is stopped.
func (k *Kinds) waitListed(ctx context.Context, key kindKey, inf cache.Informer) error {
	wctx, cancel := context.WithTimeout(ctx, InformerSyncTimeout)
	defer cancel()
	// Polled finely: client-go's WaitForCacheSync looks every 100 ms, which
	// is most of a small kind's first listing.
	synced := func(context.Context) (bool, error) { return inf.HasSynced(), nil }
	if wait.PollUntilContextCancel(wctx, syncPoll, true, synced) != nil {
		k.drop(ctx, key)
		return fmt.Errorf("%s watch cache did not sync within %s: check that the agent may list and watch it", key.gvk.Kind, InformerSyncTimeout)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ready[key] = true
	return nil
}

// syncPoll is how often startInformer looks whether a listing is done.
const syncPoll = 5 * time.Millisecond

func (k *Kinds) isReady(key kindKey) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.listedLocked(key)
}

// listedLocked reports whether key's informer has listed: marked ready, or
// listing and done, which its waiter would mark a moment later (k.mu is
// held).
func (k *Kinds) listedLocked(key kindKey) bool {
	if k.ready[key] {
		return true
	}
	if inf := k.listing[key]; inf != nil && inf.HasSynced() {
		k.ready[key] = true
		return true
	}
	return false
}

// drop stops key's informer, if any, so a refused list is not retried
// (and logged) forever; its watch is registered again once the kind is
// readable.
func (k *Kinds) drop(ctx context.Context, key kindKey) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(key.gvk)
	_ = key.cache.RemoveInformer(ctx, u)
	k.mu.Lock()
	delete(k.ready, key)
	delete(k.watched, key)
	delete(k.live, key)
	var fns []func()
	if a := k.after[key]; a != nil {
		fns, a.fns = a.fns, nil
		delete(k.after, key)
	}
	k.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// oneLine joins errors on one line, for a condition message; errors.Is and
// errors.As still see each of them.
type oneLine []error

func (e oneLine) Error() string {
	if len(e) == 1 {
		return e[0].Error()
	}
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e oneLine) Unwrap() []error { return e }
