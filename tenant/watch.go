package tenant

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// namedWatch serves the objects of one kind (Secrets or ConfigMaps) that
// GitSyncs name, from watches, so a converged GitSync sends no request to
// read them. Each object has its own list+watch, field-selected on its
// name in its namespace: the agent holds exactly the objects GitSyncs
// name, never a namespace's others. A watch starts when a GitSync first
// names the object and stops when no GitSync does. A change to the object
// requeues the GitSyncs that name it with a fresh look at their remote, so
// fixed credentials or new variables are used at once.
//
// It needs list and watch on the kind in GitSync namespaces (resourceNames
// cannot be granted ahead for names tenants choose). Where the agent may
// only get them, the watch of that object is given up at its first refusal
// and the object is read with a GET at each use.
type namedWatch struct {
	// kind is KindSecret or KindConfigMap: one watch type serves both,
	// for credentials, keys and substitution variables.
	kind      string
	clientset kubernetes.Interface
	reader    client.Reader // GETs where watching is forbidden
	// requeue asks for a GitSync to be reconciled with a fresh fetch.
	requeue func(types.NamespacedName)
	runCtx  func() context.Context

	mu      sync.Mutex
	objects map[types.NamespacedName]*watched
	byUser  map[types.NamespacedName]map[types.NamespacedName]bool // GitSync → objects it reads
}

// watched is one object's watch and the GitSyncs naming it.
type watched struct {
	informer toolscache.SharedIndexInformer
	stop     context.CancelFunc
	users    map[types.NamespacedName]bool
	// refused is set when the agent may not list or watch the object: it
	// is then read with a GET.
	refused bool
	err     error // the last list or watch failure, until a sync
}

// newNamedWatch returns a watch of the objects of kind that GitSyncs name
// (RefsOf), releasing a GitSync's objects when it stops naming them or is
// deleted.
func newNamedWatch(opts Options, kind string) (*namedWatch, error) {
	w := &namedWatch{kind: kind, clientset: opts.Clientset, reader: opts.APIReader, requeue: opts.Requeue, runCtx: opts.RunContext,
		objects: map[types.NamespacedName]*watched{}, byUser: map[types.NamespacedName]map[types.NamespacedName]bool{}}
	_, err := opts.GitSyncs.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			if gs, ok := obj.(*v1.GitSync); ok {
				w.release(client.ObjectKeyFromObject(gs), keysOf(gs, kind))
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if gs, ok := obj.(*v1.GitSync); ok {
				w.release(client.ObjectKeyFromObject(gs), nil)
			}
		},
	})
	return w, err
}

// get returns the object key for the GitSync user, watching it from now
// on. A missing object is a NotFound error, as from the API.
func (w *namedWatch) get(ctx context.Context, user, key types.NamespacedName) (client.Object, error) {
	ws := w.use(user, key)
	for {
		w.mu.Lock()
		refused, err := ws.refused, ws.err
		w.mu.Unlock()
		if refused {
			s := w.newObject()
			return s, w.reader.Get(ctx, key, s)
		}
		if ws.informer.HasSynced() {
			return w.read(ws, key)
		}
		if err != nil { // the watch retries by itself; the sync is retried with backoff
			return nil, fmt.Errorf("%s/%s/%s watch failed: %w", w.kind, key.Namespace, key.Name, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s/%s/%s watch not ready: %w", w.kind, key.Namespace, key.Name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (w *namedWatch) read(ws *watched, key types.NamespacedName) (client.Object, error) {
	obj, ok, err := ws.informer.GetStore().GetByKey(key.Namespace + "/" + key.Name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource(strings.ToLower(w.kind)+"s"), key.Name)
	}
	return obj.(client.Object).DeepCopyObject().(client.Object), nil
}

// newObject returns an empty object of the watch's kind.
func (w *namedWatch) newObject() client.Object {
	if w.kind == KindConfigMap {
		return &corev1.ConfigMap{}
	}
	return &corev1.Secret{}
}

// use records that user names key and returns key's watch, started if new.
func (w *namedWatch) use(user, key types.NamespacedName) *watched {
	w.mu.Lock()
	defer w.mu.Unlock()
	ws, ok := w.objects[key]
	if !ok {
		ws = w.start(key)
		w.objects[key] = ws
	}
	ws.users[user] = true
	if w.byUser[user] == nil {
		w.byUser[user] = map[types.NamespacedName]bool{}
	}
	w.byUser[user][key] = true
	return ws
}

// start begins watching key; w.mu is held.
func (w *namedWatch) start(key types.NamespacedName) *watched {
	byName := fields.OneTermEqualSelector(metav1.ObjectNameField, key.Name).String()
	list := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return w.clientset.CoreV1().Secrets(key.Namespace).List(ctx, o)
	}
	watchFn := func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return w.clientset.CoreV1().Secrets(key.Namespace).Watch(ctx, o)
	}
	if w.kind == KindConfigMap {
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return w.clientset.CoreV1().ConfigMaps(key.Namespace).List(ctx, o)
		}
		watchFn = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return w.clientset.CoreV1().ConfigMaps(key.Namespace).Watch(ctx, o)
		}
	}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = byName
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = byName
			return watchFn(ctx, o)
		},
	}
	ws := &watched{
		informer: toolscache.NewSharedIndexInformer(lw, w.newObject(), 0, toolscache.Indexers{}),
		users:    map[types.NamespacedName]bool{},
	}
	ctx, cancel := context.WithCancel(w.runCtx())
	ws.stop = cancel
	_ = ws.informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *toolscache.Reflector, err error) {
		w.failed(key, ws, err)
	})
	_, _ = ws.informer.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, initial bool) {
			if !initial {
				w.changed(ws)
			}
		},
		UpdateFunc: func(_, _ any) { w.changed(ws) },
		DeleteFunc: func(any) { w.changed(ws) },
	})
	go ws.informer.RunWithContext(ctx)
	return ws
}

// failed records a list or watch failure of ws; a refusal gives the watch up.
func (w *namedWatch) failed(key types.NamespacedName, ws *watched, err error) {
	refused := apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
	w.mu.Lock()
	ws.err = err
	if refused && !ws.refused {
		ws.refused = true
		ws.stop()
	}
	w.mu.Unlock()
	if refused {
		ctrl.Log.WithName("tenant").Info("no list/watch permission: reading the "+w.kind+" at each use instead",
			strings.ToLower(w.kind), key.String(), "error", err.Error())
	}
}

// changed requeues the GitSyncs naming ws's object.
func (w *namedWatch) changed(ws *watched) {
	w.mu.Lock()
	users := make([]types.NamespacedName, 0, len(ws.users))
	for u := range ws.users {
		users = append(users, u)
	}
	w.mu.Unlock()
	for _, u := range users {
		w.requeue(u)
	}
}

// release drops user from the objects not in keep, stopping the watches no
// GitSync needs any more.
func (w *namedWatch) release(user types.NamespacedName, keep map[types.NamespacedName]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for key := range w.byUser[user] {
		if keep[key] {
			continue
		}
		delete(w.byUser[user], key)
		ws := w.objects[key]
		delete(ws.users, user)
		if len(ws.users) == 0 {
			ws.stop()
			delete(w.objects, key)
		}
	}
	if len(w.byUser[user]) == 0 {
		delete(w.byUser, user)
	}
}

// refusedFor reports whether the agent may not list and watch the object
// key, so it is read with GETs.
func (w *namedWatch) refusedFor(key types.NamespacedName) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	ws, ok := w.objects[key]
	return ok && ws.refused
}
