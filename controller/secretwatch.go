package controller

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
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// secretWatch serves the Secrets GitSyncs name for their source credentials
// and kubeconfigs from watches, so a converged GitSync sends no request to
// read them. Each Secret has its own list+watch, field-selected on its name
// in its namespace: the agent holds exactly the Secrets GitSyncs name, never
// a namespace's others. A watch starts when a GitSync first names the
// Secret and stops when no GitSync does. A change to a Secret requeues the
// GitSyncs that name it with a fresh look at their remote, so fixed
// credentials are used at once.
//
// It needs list and watch on Secrets in GitSync namespaces (resourceNames
// cannot be granted ahead for names tenants choose). Where the agent may
// only get them, the watch of that Secret is given up at its first refusal
// and the Secret is read with a GET at each fetch, as before.
type secretWatch struct {
	// kind is Secret or ConfigMap: one watch type serves both, for
	// credentials, keys and substitution variables (configMapWatch).
	kind string
	// refsOf returns the objects of kind a GitSync names, to release
	// the others when it changes.
	refsOf    func(*v1.GitSync) map[types.NamespacedName]bool
	clientset kubernetes.Interface
	reader    client.Reader // GETs where watching is forbidden
	// requeue asks for a GitSync to be reconciled with a fresh fetch.
	requeue func(types.NamespacedName)
	runCtx  func() context.Context

	mu      sync.Mutex
	secrets map[types.NamespacedName]*watchedSecret
	byUser  map[types.NamespacedName]map[types.NamespacedName]bool // GitSync → Secrets it reads
}

// watchedSecret is one Secret's watch and the GitSyncs naming it.
type watchedSecret struct {
	informer toolscache.SharedIndexInformer
	stop     context.CancelFunc
	users    map[types.NamespacedName]bool
	// refused is set when the agent may not list or watch the Secret: it
	// is then read with a GET.
	refused bool
	err     error // the last list or watch failure, until a sync
}

// newSecretWatch returns the agent's Secret watch, releasing a GitSync's
// Secrets when it stops naming them or is deleted.
func newSecretWatch(mgr manager.Manager, requeue func(types.NamespacedName), runCtx func() context.Context) (*secretWatch, error) {
	return newObjectWatch(mgr, "Secret", secretsOf, requeue, runCtx)
}

// newObjectWatch returns a watch of the objects of kind (Secret or
// ConfigMap) that GitSyncs name, as refsOf says.
func newObjectWatch(mgr manager.Manager, kind string, refsOf func(*v1.GitSync) map[types.NamespacedName]bool, requeue func(types.NamespacedName), runCtx func() context.Context) (*secretWatch, error) {
	cs, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, err
	}
	w := &secretWatch{kind: kind, refsOf: refsOf, clientset: cs, reader: mgr.GetAPIReader(), requeue: requeue, runCtx: runCtx,
		secrets: map[types.NamespacedName]*watchedSecret{}, byUser: map[types.NamespacedName]map[types.NamespacedName]bool{}}
	inf, err := mgr.GetCache().GetInformer(context.Background(), &v1.GitSync{})
	if err != nil {
		return nil, err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			if gs, ok := obj.(*v1.GitSync); ok {
				w.release(client.ObjectKeyFromObject(gs), w.refsOf(gs))
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

// secretsOf returns the Secrets gs reads through the watch.
func secretsOf(gs *v1.GitSync) map[types.NamespacedName]bool {
	out := map[types.NamespacedName]bool{}
	if gs.DeletionTimestamp != nil {
		return out
	}
	if ref := gs.Spec.Source.SecretRef; ref != nil {
		out[types.NamespacedName{Namespace: gs.Namespace, Name: ref.Name}] = true
	}
	if kc := gs.Spec.KubeConfig; kc != nil {
		out[types.NamespacedName{Namespace: gs.Namespace, Name: kc.SecretRef.Name}] = true
	}
	if wh := gs.Spec.Webhook; wh != nil { // webhook.go
		out[types.NamespacedName{Namespace: gs.Namespace, Name: wh.SecretRef.Name}] = true
	}
	for k := range variableRefsOf(gs, "Secret") { // substitute.go
		out[k] = true
	}
	if d := gs.Spec.Decryption; d != nil {
		out[types.NamespacedName{Namespace: gs.Namespace, Name: d.SecretRef.Name}] = true
	}
	return out
}

// get returns the Secret key for the GitSync user, watching it from now on.
// A missing Secret is a NotFound error, as from the API.
func (w *secretWatch) get(ctx context.Context, user, key types.NamespacedName) (client.Object, error) {
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

func (w *secretWatch) read(ws *watchedSecret, key types.NamespacedName) (client.Object, error) {
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
func (w *secretWatch) newObject() client.Object {
	if w.kind == "ConfigMap" {
		return &corev1.ConfigMap{}
	}
	return &corev1.Secret{}
}

// use records that user names key and returns key's watch, started if new.
func (w *secretWatch) use(user, key types.NamespacedName) *watchedSecret {
	w.mu.Lock()
	defer w.mu.Unlock()
	ws, ok := w.secrets[key]
	if !ok {
		ws = w.start(key)
		w.secrets[key] = ws
	}
	ws.users[user] = true
	if w.byUser[user] == nil {
		w.byUser[user] = map[types.NamespacedName]bool{}
	}
	w.byUser[user][key] = true
	return ws
}

// start begins watching key; w.mu is held.
func (w *secretWatch) start(key types.NamespacedName) *watchedSecret {
	byName := fields.OneTermEqualSelector(metav1.ObjectNameField, key.Name).String()
	list := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return w.clientset.CoreV1().Secrets(key.Namespace).List(ctx, o)
	}
	watchFn := func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return w.clientset.CoreV1().Secrets(key.Namespace).Watch(ctx, o)
	}
	if w.kind == "ConfigMap" {
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
	ws := &watchedSecret{
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
func (w *secretWatch) failed(key types.NamespacedName, ws *watchedSecret, err error) {
	refused := apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
	w.mu.Lock()
	ws.err = err
	if refused && !ws.refused {
		ws.refused = true
		ws.stop()
	}
	w.mu.Unlock()
	if refused {
		ctrl.Log.WithName("secrets").Info("no list/watch permission: reading the "+w.kind+" at each use instead",
			strings.ToLower(w.kind), key.String(), "error", err.Error())
	}
}

// changed requeues the GitSyncs naming ws's Secret.
func (w *secretWatch) changed(ws *watchedSecret) {
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

// release drops user from the Secrets not in keep, stopping the watches no
// GitSync needs any more.
func (w *secretWatch) release(user types.NamespacedName, keep map[types.NamespacedName]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for key := range w.byUser[user] {
		if keep[key] {
			continue
		}
		delete(w.byUser[user], key)
		ws := w.secrets[key]
		delete(ws.users, user)
		if len(ws.users) == 0 {
			ws.stop()
			delete(w.secrets, key)
		}
	}
	if len(w.byUser[user]) == 0 {
		delete(w.byUser, user)
	}
}

// secretReader reads Secrets (or, from a ConfigMap watch, ConfigMaps) for
// one GitSync through the watch; any other kind is refused.
type secretReader struct {
	w    *secretWatch
	user types.NamespacedName
}

var _ client.Reader = secretReader{}

func (r secretReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if kind := obj.GetObjectKind().GroupVersionKind().Kind; kind != "" && kind != r.w.kind {
		return fmt.Errorf("this reader reads %ss only, not %s", r.w.kind, kind)
	}
	got, err := r.w.get(ctx, r.user, key)
	if err != nil {
		return err
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		if s, ok := got.(*corev1.Secret); ok {
			s.DeepCopyInto(o)
			return nil
		}
	case *corev1.ConfigMap:
		if c, ok := got.(*corev1.ConfigMap); ok {
			c.DeepCopyInto(o)
			return nil
		}
	}
	return fmt.Errorf("this reader reads %ss only, not %T", r.w.kind, obj)
}

func (r secretReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return fmt.Errorf("secretReader reads single Secrets only")
}
