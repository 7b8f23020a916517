package cluster

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"

	"gitsync.dev/gitsync/source/helm"
)

// ReadCapabilities reads what Helm templates see of a cluster, as `helm
// install` builds it from discovery: the /version gitVersion, and every
// served group/version and group/version/Kind, sorted. A group whose
// discovery failed (an aggregated API that is down) is left out, as Helm
// leaves it out.
func ReadCapabilities(ctx context.Context, d discovery.DiscoveryInterface) (helm.Capabilities, error) {
	caps, _, err := readServed(ctx, d)
	return caps, err
}

// readServed is ReadCapabilities and the names of the resources served
// ("plural.group", a CustomResourceDefinition's name for its own).
func readServed(ctx context.Context, d discovery.DiscoveryInterface) (helm.Capabilities, map[string]bool, error) {
	if err := ctx.Err(); err != nil {
		return helm.Capabilities{}, nil, err
	}
	v, err := d.ServerVersion()
	if err != nil {
		return helm.Capabilities{}, nil, fmt.Errorf("cluster version read failed: %w", err)
	}
	groups, resources, err := d.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return helm.Capabilities{}, nil, fmt.Errorf("cluster discovery failed: %w", err)
	}
	set := map[string]bool{}
	for _, g := range groups {
		for _, gv := range g.Versions {
			set[gv.GroupVersion] = true
		}
	}
	served := map[string]bool{}
	for _, rl := range resources {
		gv, _ := schema.ParseGroupVersion(rl.GroupVersion)
		for _, r := range rl.APIResources {
			set[path.Join(rl.GroupVersion, r.Kind)] = true
			if !strings.Contains(r.Name, "/") {
				served[r.Name+"."+gv.Group] = true
			}
		}
	}
	apis := make([]string, 0, len(set))
	for k := range set {
		apis = append(apis, k)
	}
	slices.Sort(apis)
	return helm.Capabilities{KubeVersion: v.GitVersion, APIVersions: apis}, served, nil
}

// Where a cluster's CustomResourceDefinitions and APIServices may not be
// watched, its capabilities are read again at most this often.
const unwatchedCapabilitiesTTL = time.Minute

// catchUp bounds how long a re-read waits for discovery to agree with a
// CustomResourceDefinition event (it serves a new kind a while after the
// CRD is Established, and stops serving a deleted one a while after the
// delete); retryFirst and retryMax are its backoff.
const (
	catchUp    = 30 * time.Second
	retryFirst = 50 * time.Millisecond
	retryMax   = 2 * time.Second
)

// apiResources are the objects whose change may change what a cluster
// serves.
var (
	crdResource        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	apiServiceResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// capabilityWatch keeps one cluster's capabilities: read from discovery at
// the first use, then kept until a CustomResourceDefinition or APIService
// changes (a metadata watch), when they are read again in the background
// and, if they differ, changed is told. Where those kinds may not be
// watched, an answer is kept at most unwatchedCapabilitiesTTL instead. A
// converged agent sends no request here.
type capabilityWatch struct {
	disc    discovery.DiscoveryInterface
	md      metadata.Interface // nil: nothing is watched, the TTL applies
	runCtx  func() context.Context
	changed func()

	start sync.Once
	kick  chan struct{}

	mu        sync.Mutex
	cur       *helm.Capabilities
	readAt    time.Time
	informers []toolscache.SharedIndexInformer
	refused   bool
	stop      context.CancelFunc
	// expect are the CRDs seen changing since the last agreeing read:
	// name → whether discovery should serve it.
	expect map[string]bool
}

func newCapabilityWatch(disc discovery.DiscoveryInterface, md metadata.Interface, runCtx func() context.Context, changed func()) *capabilityWatch {
	return &capabilityWatch{disc: disc, md: md, runCtx: runCtx, changed: changed,
		kick: make(chan struct{}, 1), expect: map[string]bool{}}
}

// get returns the cluster's capabilities, reading them only at the first
// use, or when they are not watched and the last read is too old.
func (w *capabilityWatch) get(ctx context.Context) (helm.Capabilities, error) {
	w.start.Do(w.run)
	w.mu.Lock()
	cur, fresh := w.cur, w.watchedLocked() || time.Since(w.readAt) < unwatchedCapabilitiesTTL
	w.mu.Unlock()
	if cur != nil && fresh {
		return *cur, nil
	}
	caps, _, err := readServed(ctx, w.disc)
	if err != nil {
		return helm.Capabilities{}, err
	}
	if w.store(caps) && cur != nil {
		w.changed()
	}
	return caps, nil
}

// store keeps caps as the current answer and reports whether it differs
// from the one before.
func (w *capabilityWatch) store(caps helm.Capabilities) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	differs := w.cur == nil || w.cur.KubeVersion != caps.KubeVersion || !slices.Equal(w.cur.APIVersions, caps.APIVersions)
	w.cur, w.readAt = &caps, time.Now()
	return differs
}

// watchedLocked reports whether changes are watched: every informer
// synced, none refused.
func (w *capabilityWatch) watchedLocked() bool {
	if w.md == nil || w.refused || len(w.informers) == 0 {
		return false
	}
	for _, inf := range w.informers {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// run starts the watches and the background re-reader.
func (w *capabilityWatch) run() {
	if w.md == nil {
		return
	}
	ctx, cancel := context.WithCancel(w.runCtx())
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stop = cancel
	for _, gvr := range []schema.GroupVersionResource{crdResource, apiServiceResource} {
		inf := metadatainformer.NewFilteredMetadataInformer(w.md, gvr, "", 0, toolscache.Indexers{}, nil).Informer()
		_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *toolscache.Reflector, err error) {
			if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
				w.refuse(gvr, err)
				return
			}
			w.saw(gvr, nil, false) // events may have been missed
		})
		_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(obj any, initial bool) {
				if !initial {
					w.saw(gvr, obj, false)
				}
			},
			UpdateFunc: func(_, obj any) { w.saw(gvr, obj, false) },
			DeleteFunc: func(obj any) { w.saw(gvr, obj, true) },
		})
		w.informers = append(w.informers, inf)
		go inf.RunWithContext(ctx)
	}
	go w.reread(ctx)
}

// saw records a change: for a CRD, whether discovery should now serve it.
func (w *capabilityWatch) saw(gvr schema.GroupVersionResource, obj any, deleted bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok && gvr == crdResource {
		w.mu.Lock()
		w.expect[m.Name] = !deleted && m.DeletionTimestamp == nil
		w.mu.Unlock()
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// reread reads the capabilities again after each change, until discovery
// agrees with the CRDs seen changing or catchUp has passed, and tells
// changed when they differ from what was kept.
func (w *capabilityWatch) reread(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		}
		differs := false
		until, wait := time.Now().Add(catchUp), retryFirst
		for {
			caps, served, err := readServed(ctx, w.disc)
			agrees := false
			if err == nil {
				differs = w.store(caps) || differs
				agrees = w.agrees(served)
			}
			if agrees || time.Now().After(until) || ctx.Err() != nil {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, retryMax)
		}
		w.mu.Lock()
		clear(w.expect)
		w.mu.Unlock()
		if differs {
			w.changed()
		}
	}
}

// agrees reports whether served matches every CRD seen changing.
func (w *capabilityWatch) agrees(served map[string]bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, want := range w.expect {
		if served[name] != want {
			return false
		}
	}
	return true
}

// refuse gives the watches up: answers are then kept at most
// unwatchedCapabilitiesTTL.
func (w *capabilityWatch) refuse(gvr schema.GroupVersionResource, err error) {
	w.mu.Lock()
	first := !w.refused
	w.refused = true
	stop := w.stop
	w.mu.Unlock()
	if first {
		stop()
		ctrl.Log.WithName("cluster").Info("no list/watch permission on "+gvr.Resource+": Helm capabilities are read again at most every "+
			unwatchedCapabilitiesTTL.String(), "error", err.Error())
	}
}

// close stops the watches.
func (w *capabilityWatch) close() {
	w.mu.Lock()
	stop := w.stop
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
}
