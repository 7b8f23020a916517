package controller

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"gitsync.dev/gitsync/tracing"
	"go.opentelemetry.io/otel/trace"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/cluster"
	"gitsync.dev/gitsync/commitstatus"
	"gitsync.dev/gitsync/health/rules"
	"gitsync.dev/gitsync/internal/egress"
	"gitsync.dev/gitsync/livecache"
	"gitsync.dev/gitsync/metrics"
	"gitsync.dev/gitsync/notify"
	"gitsync.dev/gitsync/source/git/githubapp"
	"gitsync.dev/gitsync/source/remote"
	"gitsync.dev/gitsync/source/verify"
	"gitsync.dev/gitsync/tenant"
)

// GitSyncReconciler makes the cluster match each GitSync's source. It reads
// the GitSync from the informer cache, keeps per-key memory only to avoid
// repeating work (never to decide what the cluster should look like), and
// writes status only when it changed.
type GitSyncReconciler struct {
	client    client.Client
	apiReader client.Reader
	recorder  events.EventRecorder
	opts      Options
	clock     clock.Clock
	// tracer starts each sync's trace (Options.Tracer's).
	tracer     trace.Tracer
	targets    *cluster.Targets
	backoff    *backoff
	kinds      *livecache.Kinds // the kinds applied, watched for drift
	healthSets *rules.Cache     // compiled health rules, one per distinct set
	waits      *waitSet         // GitSyncs whose objects' status changes requeue them
	// reader reads every Secret and ConfigMap a GitSync names: in its
	// namespace, as its account, from watches.
	reader    *tenant.Reader
	resolver  *remote.Resolver
	verifier  *verify.Verifier // signature verdicts per (revision, keys)
	gitEgress *egress.Dialer   // Git traffic, limited per host
	triggers  chan event.GenericEvent
	// probe reads as the agent, around the cache: it checks that a kind
	// can be listed and watched before its informer starts (livecache.Kinds).
	probe client.WithWatch

	commits        *commitstatus.Queue
	commitHTTPOnce sync.Once
	commitHTTP     *http.Client // every commit status post's
	notes          *notify.Queue
	notifyHTTPOnce sync.Once
	notifyHTTP     *http.Client // every notification's
	appTokensOnce  sync.Once
	appTokens      *githubapp.Tokens // GitHub App tokens, shared by every GitSync

	mu     sync.Mutex
	runCtx context.Context
	states map[types.NamespacedName]*syncState
	share  shareQueue   // replicas sharing the GitSyncs
	fair   *fairShare   // no namespace holds every worker
	news   revisionNews // changed paths first

	artifacts artifacts // registry clients and cosign verdicts of oci:// sources
}

var _ reconcile.Reconciler = (*GitSyncReconciler)(nil)

// New builds a reconciler for the GitSyncs in mgr's cache and registers it,
// its drift watches and its metrics with mgr.
func New(mgr manager.Manager, opts Options) (*GitSyncReconciler, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &GitSyncReconciler{
		client:     mgr.GetClient(),
		apiReader:  mgr.GetAPIReader(),
		recorder:   clippedEvents{mgr.GetEventRecorder("gitsync")},
		opts:       opts,
		clock:      clock.RealClock{},
		backoff:    newBackoff(opts.MinBackoff, 24*time.Hour, opts.Limits, clock.RealClock{}),
		triggers:   make(chan event.GenericEvent, 1024),
		waits:      &waitSet{},
		states:     map[types.NamespacedName]*syncState{},
		runCtx:     context.Background(),
		fair:       newFairShare(opts.MaxConcurrentReconciles, opts.NamespaceShare),
		healthSets: rules.NewCache(maxHealthRuleSets),
		verifier:   verify.NewVerifier(0),
		tracer:     opts.Tracer.Tracer(tracing.Scope),
	}
	r.commits = r.newCommitQueue(opts.CommitStatusTimeout)
	r.notes = r.newNotifyQueue()
	r.resolver = remote.NewResolver(opts.Fetcher, remote.ResolverOptions{ShareFor: opts.Limits.ResolveShareFor, Clock: r.clock, Base: r.baseContext})
	r.gitEgress = remote.LimitHosts(opts.Egress, opts.Limits.GitHostConcurrency)
	if r.targets, err = cluster.New(cluster.Options{
		Config: mgr.GetConfig(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(),
		Cache: mgr.GetCache(), Apply: opts.Apply, QPS: opts.QPS, Burst: opts.Burst,
		AllowExec: opts.AllowExecPlugins, Egress: &r.opts.Egress, RunContext: r.baseContext,
		CapabilitiesChanged: r.capabilitiesChanged,
	}); err != nil {
		return nil, err
	}
	r.probe = r.targets.Agent()
	if r.reader, err = newTenantReader(mgr, opts, r.Trigger, r.baseContext); err != nil {
		return nil, err
	}
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("gitsync").
		For(&v1.GitSync{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		WatchesRawSource(crsource.Channel(r.triggers, &handler.EnqueueRequestForObject{})).
		WatchesRawSource(r.shareSource()).
		WatchesRawSource(r.newsSource()).
		WatchesRawSource(r.fair.source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles, RateLimiter: r.backoff}).
		Build(r)
	if err != nil {
		return nil, err
	}
	r.kinds = newDriftWatch(c, r.waits)
	if err := r.watchDependents(mgr, c); err != nil {
		return nil, err
	}
	if err := r.warmKinds(mgr); err != nil {
		return nil, err
	}
	err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		r.mu.Lock()
		r.runCtx = ctx
		r.mu.Unlock()
		<-ctx.Done()
		return nil
	}))
	return r, err
}

func (r *GitSyncReconciler) baseContext() context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runCtx
}

// Trigger asks for the GitSync key to be reconciled now, asking its remote
// for a new revision (a webhook said it moved).
func (r *GitSyncReconciler) Trigger(key types.NamespacedName) { r.TriggerAt(key, r.clock.Now()) }

// TriggerAt is Trigger for news that arrived at at: the remote's answer
// must have been asked at or after it, and answers asked since are shared
// (remote.Resolver), so one webhook for 500 GitSyncs costs one ls-remote.
func (r *GitSyncReconciler) TriggerAt(key types.NamespacedName, at time.Time) {
	r.state(key).markFetch(at)
	r.enqueue(key)
}

// enqueueSoon is enqueue for a reconcile that must not be lost when a
// burst fills the channel: it waits for room, at most a minute.
func (r *GitSyncReconciler) enqueueSoon(key types.NamespacedName) {
	ev := triggerOf(key)
	select {
	case r.triggers <- ev:
	default:
		go func() {
			select {
			case r.triggers <- ev:
			case <-time.After(time.Minute):
			}
		}()
	}
}

// enqueue adds key to the work queue, through the trigger channel.
func (r *GitSyncReconciler) enqueue(key types.NamespacedName) {
	select {
	case r.triggers <- triggerOf(key):
	default:
		// The channel is full: a burst is being delivered, and the
		// reconcile that drains it will see the fetch mark.
	}
}

// triggerOf is the trigger channel's event for the GitSync key.
func triggerOf(key types.NamespacedName) event.GenericEvent {
	gs := &v1.GitSync{}
	gs.Name, gs.Namespace = key.Name, key.Namespace
	return event.GenericEvent{Object: gs}
}

// Reconcile implements reconcile.Reconciler.
func (r *GitSyncReconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	ctx, release, ok := r.acquire(ctx, req.NamespacedName) // !ok: another replica's GitSync
	if !ok {
		return ctrl.Result{}, nil
	}
	defer release()
	free, ok := r.fair.acquire(req.NamespacedName) // requeued when its namespace has a free slot
	if !ok {
		return ctrl.Result{}, nil
	}
	defer free()
	start := r.clock.Now()
	ctx = withReport(ctx)
	gs := &v1.GitSync{}
	if err := r.client.Get(ctx, req.NamespacedName, gs); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	st := r.state(req.NamespacedName)
	if st.staleRead(gs.ResourceVersion) {
		// The cache has not seen our last write yet; acting on it would
		// repeat the write or report a transition twice.
		return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	result, res, err := r.reconcile(ctx, gs, st)
	res, err = r.done(ctx, gs, result, r.clock.Since(start), res, err)
	return settle(res), err
}

func (r *GitSyncReconciler) reconcile(ctx context.Context, gs *v1.GitSync, st *syncState) (metrics.Result, ctrl.Result, error) {
	key := client.ObjectKeyFromObject(gs)
	if !gs.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, gs, st)
	}
	r.backoff.setCap(key, retryIntervalOf(gs))
	if !controllerutil.ContainsFinalizer(gs, v1.Finalizer) {
		if err := r.patchMeta(ctx, gs, st, func() { controllerutil.AddFinalizer(gs, v1.Finalizer) }); err != nil {
			return metrics.Retry, ctrl.Result{}, err
		}
	}
	if gs.Spec.Suspend {
		r.waits.set(key, false)
		return metrics.Suspended, ctrl.Result{}, r.writeSuspended(ctx, gs, st)
	}
	out := r.syncOrHold(ctx, gs, st)
	if out.yielded {
		// Its content did not change; GitSyncs whose content did go
		// first (yieldToChanged). The revision is resolved and fetched.
		return metrics.Yielded, ctrl.Result{RequeueAfter: time.Millisecond}, nil
	}
	r.waits.set(key, out.waitsForHealth())
	if err := r.report(ctx, gs, st, out); err != nil {
		return metrics.Retry, ctrl.Result{}, err
	}
	r.commitOutcome(gs, out)
	se := out.syncErr()
	switch {
	case se == nil && out.waiting != "":
		// Status changes of the objects requeue it before, most likely.
		return metrics.Waiting, ctrl.Result{RequeueAfter: min(out.recheck, r.jitter(intervalOf(gs)))}, nil
	case se == nil:
		return metrics.Success, ctrl.Result{RequeueAfter: r.jitter(intervalOf(gs))}, nil
	case se.Stalled && se.Reason == v1.ReasonForbidden:
		// Rights are often granted right after the refusal (a platform
		// applies a tenant's Role beside its GitSync, and the apiserver's
		// authorizer sees a new binding a moment after it is stored): asked
		// again within forbiddenRecheck, not only at the interval.
		return metrics.Stalled, ctrl.Result{RequeueAfter: min(forbiddenRecheck, r.jitter(intervalOf(gs)))}, nil
	case se.Stalled:
		// Not retried: the interval still asks the remote for a new revision.
		return metrics.Stalled, ctrl.Result{RequeueAfter: r.jitter(intervalOf(gs))}, nil
	default:
		return metrics.Retry, ctrl.Result{}, se
	}
}

// forbiddenRecheck bounds how long a GitSync Stalled Forbidden waits before
// its identity's rights are asked again (a few access reviews).
const forbiddenRecheck = 30 * time.Second

// jitter stretches d by up to Options.Jitter, never shortening it, so a
// requeued reconcile always finds its last resolve at least d old.
func (r *GitSyncReconciler) jitter(d time.Duration) time.Duration {
	return d + time.Duration(rand.Float64()*r.opts.Jitter*float64(d))
}

func (r *GitSyncReconciler) state(key types.NamespacedName) *syncState {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.states[key]
	if !ok {
		st = &syncState{}
		r.states[key] = st
	}
	return st
}

func (r *GitSyncReconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.states, key)
	r.mu.Unlock()
	r.targets.Forget(key)
	r.fair.forget(key)
	r.waits.set(key, false)
	r.backoff.setCap(key, 0)
	r.opts.Metrics.Forget(key)
	r.commits.Forget(key)
	r.notes.Forget(key)
}

// patchMeta changes gs's metadata with a merge patch that fails on a stale
// resourceVersion.
func (r *GitSyncReconciler) patchMeta(ctx context.Context, gs *v1.GitSync, st *syncState, mutate func()) error {
	before := gs.DeepCopy()
	mutate()
	if err := r.client.Patch(ctx, gs, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	st.wrote(before.ResourceVersion)
	return nil
}

func intervalOf(gs *v1.GitSync) time.Duration {
	if d := gs.Spec.Interval.Duration; d > 0 {
		return d
	}
	return 5 * time.Minute
}

func retryIntervalOf(gs *v1.GitSync) time.Duration {
	if gs.Spec.RetryInterval != nil && gs.Spec.RetryInterval.Duration > 0 {
		return gs.Spec.RetryInterval.Duration
	}
	return intervalOf(gs)
}

func (r *GitSyncReconciler) timeoutOf(gs *v1.GitSync) time.Duration {
	if gs.Spec.Timeout != nil && gs.Spec.Timeout.Duration > 0 {
		return gs.Spec.Timeout.Duration
	}
	return r.opts.DefaultTimeout
}
