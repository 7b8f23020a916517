package tenant

import (
	"context"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
)

// rbacResources are the objects whose change may change an answer.
var rbacResources = []schema.GroupVersionResource{
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
}

// rbacWatch counts changes to RBAC objects: an answer asked at one count is
// stale at the next. It holds only the objects' metadata, starts at the
// first access check (an agent whose GitSyncs name no account never
// watches RBAC) and gives up, for good, where it may not list or watch.
type rbacWatch struct {
	client metadata.Interface // nil: RBAC is not watched
	runCtx func() context.Context

	start   sync.Once
	changes atomic.Uint64

	mu        sync.Mutex
	informers []toolscache.SharedIndexInformer
	refused   bool
	stop      context.CancelFunc
}

// generation returns the number of RBAC changes seen, and whether they are
// watched: false before the watches have synced and where they are refused.
func (w *rbacWatch) generation(_ context.Context) (uint64, bool) {
	if w == nil || w.client == nil {
		return 0, false
	}
	w.start.Do(w.run)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.refused {
		return 0, false
	}
	for _, inf := range w.informers {
		if !inf.HasSynced() {
			return w.changes.Load(), false
		}
	}
	return w.changes.Load(), true
}

func (w *rbacWatch) run() {
	ctx, cancel := context.WithCancel(w.runCtx())
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stop = cancel
	for _, gvr := range rbacResources {
		inf := metadatainformer.NewFilteredMetadataInformer(w.client, gvr, "", 0, toolscache.Indexers{}, nil).Informer()
		_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *toolscache.Reflector, err error) {
			w.changes.Add(1) // events may have been missed
			if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
				w.refuse(gvr, err)
			}
		})
		_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    func(_ any, initial bool) { w.changes.Add(1) },
			UpdateFunc: func(_, _ any) { w.changes.Add(1) },
			DeleteFunc: func(any) { w.changes.Add(1) },
		})
		w.informers = append(w.informers, inf)
		go inf.RunWithContext(ctx)
	}
}

// refuse gives the watches up: answers are then kept at most unwatchedTTL.
func (w *rbacWatch) refuse(gvr schema.GroupVersionResource, err error) {
	w.mu.Lock()
	first := !w.refused
	w.refused = true
	stop := w.stop
	w.mu.Unlock()
	if first {
		stop()
		ctrl.Log.WithName("tenant").Info("no list/watch permission on RBAC: access answers are kept at most "+unwatchedTTL.String(),
			"resource", gvr.Resource, "error", err.Error())
	}
}
