package livecache

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reader is one sync's view of a watch cache some of whose kinds are still
// being listed (Kinds.Start): a read of a listed kind is the cache's; a read
// of a kind still listing is answered from one LIST, with direct, of that
// kind's managed objects in the object's namespace (all of them for a
// cluster-scoped kind), made on the first such read and kept for the sync.
// So the first sync after a restart reads its own hundred objects instead of
// waiting for the listing of every managed object of its kinds. The objects
// are those the cache would hold (the same selector, the same transform), as
// fresh as a read of the apiserver. Only Get is served so; List is the
// cache's.
type Reader struct {
	kinds  *Kinds
	cache  cache.Cache
	direct client.Reader

	mu    sync.Mutex
	lists map[listKey]*listed
}

// listKey is one kind in one namespace ("" for a cluster-scoped kind).
type listKey struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// listed is one LIST of a Reader, made once; err is its failure.
type listed struct {
	once sync.Once
	objs map[string]*unstructured.Unstructured
	err  error
}

var _ client.Reader = (*Reader)(nil)

// Reader returns a Reader over c, listing kinds not listed yet with direct
// (the agent's identity, uncached: the identity c lists with).
func (k *Kinds) Reader(c cache.Cache, direct client.Reader) *Reader {
	return &Reader{kinds: k, cache: c, direct: direct, lists: map[listKey]*listed{}}
}

// Get reads key into obj (an *unstructured.Unstructured with its kind set).
func (r *Reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	gvk := obj.GetObjectKind().GroupVersionKind()
	if !ok || r.kinds.isReady(kindKey{cache: r.cache, gvk: gvk}) {
		return r.cache.Get(ctx, key, obj, opts...)
	}
	l := r.list(ctx, listKey{gvk: gvk, namespace: key.Namespace})
	if l.err != nil {
		return l.err
	}
	live, found := l.objs[key.Name]
	if !found {
		return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
	}
	live.DeepCopyInto(u)
	return nil
}

// List is the cache's List.
func (r *Reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.cache.List(ctx, list, opts...)
}

// list returns the LIST of key, made by the first caller.
func (r *Reader) list(ctx context.Context, key listKey) *listed {
	r.mu.Lock()
	l, ok := r.lists[key]
	if !ok {
		l = &listed{}
		r.lists[key] = l
	}
	r.mu.Unlock()
	l.once.Do(func() {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(key.gvk.GroupVersion().WithKind(key.gvk.Kind + "List"))
		opts := []client.ListOption{client.MatchingLabelsSelector{Selector: ManagedSelector()}}
		if key.namespace != "" {
			opts = append(opts, client.InNamespace(key.namespace))
		}
		if l.err = r.direct.List(ctx, list, opts...); l.err != nil {
			l.err = fmt.Errorf("read %s while its watch cache lists: %w", key.gvk.Kind, l.err)
			return
		}
		l.objs = make(map[string]*unstructured.Unstructured, len(list.Items))
		for i := range list.Items {
			obj := &list.Items[i]
			if _, err := CompactLive(obj); err == nil {
				l.objs[obj.GetName()] = obj
			}
		}
	})
	return l
}
