package apply

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"gitsync.dev/gitsync/drift"
	"gitsync.dev/gitsync/object"
)

// Applier applies sets of desired objects with server-side apply. It is safe
// for concurrent use; one Applier serves every sync of a process.
type Applier struct {
	opts   Options
	live   client.Reader
	dyn    dynamic.Interface
	mapper meta.RESTMapper
	differ decider
	// direct reads from the apiserver, for the one read a cache that holds
	// only managed objects cannot answer: whether a create-only object
	// exists unlabelled.
	direct client.Reader
	// written, when set, sees each object a run wrote (WithWritten).
	written func(ctx context.Context, i int, live *unstructured.Unstructured)
}

// New returns an Applier writing through cfg.
//
// live is where current objects are read from. In the agent it is a
// controller-runtime cache: a Get on an unstructured object starts an informer
// for its kind on first use, after which deciding that an object is unchanged
// costs no request at all. When live is nil the Applier reads straight from
// the apiserver (one GET per object and run), which suits one-shot CLI use.
//
// The REST mapper is discovery-backed and lazy: a kind it does not know (a CRD
// applied in the first stage) triggers a re-discovery of just that group.
// Options.Mapper and Options.HTTPClient share a mapper and a connection pool
// between Appliers of one cluster; the client-side rate limit is cfg's
// (cfg.RateLimiter, when set, is one budget for every client built from cfg).
func New(cfg *rest.Config, live client.Reader, opts Options) (*Applier, error) {
	if cfg == nil {
		return nil, errors.New("apply: rest config is required")
	}
	def := DefaultOptions()
	if opts.FieldManager == "" {
		opts.FieldManager = def.FieldManager
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = def.Concurrency
	}
	if opts.CRDTimeout <= 0 {
		opts.CRDTimeout = def.CRDTimeout
	}
	if opts.RecreateTimeout <= 0 {
		opts.RecreateTimeout = def.RecreateTimeout
	}
	hc, mapper, err := clientsFor(cfg, opts)
	if err != nil {
		return nil, err
	}
	dyn := opts.Dynamic
	if dyn == nil {
		if dyn, err = dynamic.NewForConfigAndClient(cfg, hc); err != nil {
			return nil, fmt.Errorf("apply: dynamic client: %w", err)
		}
	}
	differ, c, err := newDiffer(cfg, hc, mapper, opts)
	if err != nil {
		return nil, err
	}
	if live == nil {
		live = c
	}
	return &Applier{opts: opts, live: live, dyn: dyn, mapper: mapper, differ: differ, direct: c}, nil
}

// WithDrift returns an Applier like a that applies under rules (they
// replace a's Options.Ignore) and, with detectOnly, reports objects that
// differ from Git as Drifted instead of writing them. It shares a's
// clients, mapper and in-sync memo; a is not changed.
func (a *Applier) WithDrift(rules drift.Rules, detectOnly bool) *Applier {
	c := *a
	c.opts.Ignore, c.opts.DetectOnly = rules, detectOnly
	return &c
}

// WithWritten returns an Applier like a whose runs call fn with the run's
// context, each object they created or configured, as the apiserver
// returned it, and its index in the objects given to Apply; never in a dry
// run. fn is called from the run's
// workers, concurrently for different indexes, before the entry is final, so
// it must not block. A caller that judges what was written (the agent's
// health wait) reads the write's outcome here instead of waiting for the
// watch to bring it back. a is not changed.
func (a *Applier) WithWritten(fn func(ctx context.Context, i int, live *unstructured.Unstructured)) *Applier {
	c := *a
	c.written = fn
	return &c
}

// WithLive returns an Applier like a that reads current objects from live
// instead (a sync whose kinds are still being listed reads through a
// livecache.Reader). a is not changed.
func (a *Applier) WithLive(live client.Reader) *Applier {
	c := *a
	c.live = live
	return &c
}

// clientsFor returns the HTTP client and REST mapper of opts, building
// whichever is not shared.
func clientsFor(cfg *rest.Config, opts Options) (*http.Client, meta.RESTMapper, error) {
	hc, mapper := opts.HTTPClient, opts.Mapper
	if hc == nil {
		var err error
		if hc, err = rest.HTTPClientFor(cfg); err != nil {
			return nil, nil, fmt.Errorf("apply: http client: %w", err)
		}
	}
	if mapper == nil {
		var err error
		if mapper, err = apiutil.NewDynamicRESTMapper(cfg, hc); err != nil {
			return nil, nil, fmt.Errorf("apply: rest mapper: %w", err)
		}
	}
	return hc, mapper, nil
}

// Apply makes the cluster match objs and reports one entry per object, in the
// order given. Stages run in order (CRDs, Namespaces and cluster classes
// first; CRDs are awaited until Established), then the other objects wave
// by wave (wave.go); within a stage or wave objects are applied in
// parallel. A failing object fails only its entry, and the waves after it.
//
// The error is for failures of the whole run (context cancelled, apiserver
// unreachable), or a *WaveError before anything is applied; the ChangeSet
// then holds what was decided so far.
func (a *Applier) Apply(ctx context.Context, objs []*unstructured.Unstructured) (*ChangeSet, error) {
	return a.ApplyWaves(ctx, objs, nil)
}

// ApplyWaves is Apply asking gate between two waves whether to go on; a nil
// gate always goes on.
func (a *Applier) ApplyWaves(ctx context.Context, objs []*unstructured.Unstructured, gate WaveGate) (*ChangeSet, error) {
	run := &run{
		a:             a,
		objs:          objs,
		entries:       make([]Entry, len(objs)),
		results:       make([]*unstructured.Unstructured, len(objs)),
		newKinds:      map[schema.GroupKind]bool{},
		newNamespaces: map[string]bool{},
		freshKinds:    map[schema.GroupKind]bool{},
	}
	var byStage [numStages][]int
	for i, obj := range objs {
		id := idOf(obj, a.opts.DefaultNamespace)
		run.entries[i] = Entry{ID: id, Subject: id.String()}
		byStage[stageOf(obj)] = append(byStage[stageOf(obj)], i)
	}
	order, groups, err := waves(objs, run.entries, byStage[stageRest])
	if err != nil {
		return &ChangeSet{Entries: run.entries}, err
	}
	err = run.stage(ctx, byStage[stageCluster], nil)
	if err == nil {
		run.noteNewNamespaces(byStage[stageCluster])
		var blocked map[schema.GroupKind]string
		blocked, err = run.settleCRDs(ctx, byStage[stageCluster])
		if err == nil {
			err = run.applyWaves(ctx, order, groups, blocked, gate)
		}
	}
	return &ChangeSet{Entries: run.entries}, err
}

// run is the state of one Apply call.
type run struct {
	a    *Applier
	objs []*unstructured.Unstructured
	// entries and results are indexed like objs; each goroutine writes only its own index.
	entries []Entry
	results []*unstructured.Unstructured
	// newKinds (dry run only) are kinds of CRDs in the set that do not exist
	// yet: their custom resources would be created, not skipped.
	newKinds map[schema.GroupKind]bool
	// newNamespaces (dry run only) are Namespaces in the set that do not
	// exist yet: the dry-run create of an object in one is refused (not
	// found), but the real apply would create it.
	newNamespaces map[string]bool
	// freshKinds are kinds whose CRD this run created: no object of them
	// can exist yet, so their live reads are skipped.
	freshKinds map[schema.GroupKind]bool
	// done counts finished objects for Options.Progress.
	done atomic.Int64
}

// tick reports one more finished object to Options.Progress.
func (r *run) tick() {
	if p := r.a.opts.Progress; p != nil {
		p(int(r.done.Add(1)), len(r.objs))
	}
}

// stage applies the objects at idx in parallel. An object whose kind is in
// blocked (kinds of CRDs that failed) is skipped with the CRD's failure.
func (r *run) stage(ctx context.Context, idx []int, blocked map[schema.GroupKind]string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.a.opts.Concurrency)
	for _, i := range idx {
		obj := r.objs[i]
		if crd, ok := blocked[obj.GroupVersionKind().GroupKind()]; ok {
			e := &r.entries[i]
			e.Action = Skipped
			e.Err = fmt.Errorf("%s skipped: its CustomResourceDefinition %s failed", e.Subject, crd)
			r.tick()
			continue
		}
		g.Go(func() error {
			entry, result, err := r.a.applyOne(gctx, obj, r.freshKinds[obj.GroupVersionKind().GroupKind()])
			if r.createdEarlier(obj, entry) {
				entry.Action, entry.Err = Created, nil
			}
			r.observe(gctx, i, entry, result)
			r.entries[i], r.results[i] = entry, result
			r.tick()
			return err
		})
	}
	return g.Wait()
}

// observe hands a written object to the Applier's WithWritten function.
func (r *run) observe(ctx context.Context, i int, e Entry, written *unstructured.Unstructured) {
	if r.a.written == nil || r.a.opts.DryRun || written == nil || (e.Action != Created && e.Action != Configured) {
		return
	}
	r.a.written(ctx, i, written)
}

// noteNewNamespaces records, in a dry run, the Namespaces of the first
// stage that would be created.
func (r *run) noteNewNamespaces(idx []int) {
	if !r.a.opts.DryRun {
		return
	}
	for _, i := range idx {
		if r.entries[i].Action == Created && r.objs[i].GroupVersionKind().GroupKind() == object.NamespaceKind {
			r.newNamespaces[r.entries[i].ID.Name] = true
		}
	}
}

// createdEarlier reports whether a dry-run entry was skipped or refused only
// because what it needs does not exist yet but would be created by an
// earlier stage of this run: its CRD (kind not served) or its Namespace.
func (r *run) createdEarlier(obj *unstructured.Unstructured, e Entry) bool {
	switch e.Action {
	case Skipped:
		return r.newKinds[obj.GroupVersionKind().GroupKind()]
	case Failed:
		return r.newNamespaces[e.ID.Namespace] && apierrors.IsNotFound(e.Err)
	}
	return false
}

// idOf returns obj's ID with the default namespace filled in when obj names
// none; applyOne corrects it for cluster-scoped kinds.
func idOf(obj *unstructured.Unstructured, defaultNamespace string) object.ID {
	id := object.IDOf(obj)
	if id.Namespace == "" {
		id.Namespace = defaultNamespace
	}
	return id
}

// fatal reports whether err means the apiserver cannot be reached at all, so
// the whole run stops instead of failing every entry the same way.
func fatal(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, http.ErrHandlerTimeout)
}
