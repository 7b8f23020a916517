package main

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/object"
)

// listThreshold is how many desired objects of one (kind, namespace) make
// one LIST cheaper than their GETs. Below it, GETs read no object the apply
// does not need; at or above it one request replaces many (a namespace
// holding many more objects of the kind than Git names costs bytes, not
// requests).
const listThreshold = 3

// listPageSize pages a LIST so a large namespace is read in bounded chunks.
const listPageSize = 500

// listedReader answers the applier's live reads for a one-shot CLI run: a
// (kind, namespace) holding at least listThreshold desired objects is read
// with one (paged) LIST the first time one of them is asked for, every
// other object with a GET. A LIST the user may not make (RBAC grants get
// only) falls back to GETs for that group. The answers are as fresh as the
// LIST: a CLI run reads each object once anyway.
type listedReader struct {
	direct client.Reader

	mu     sync.Mutex
	groups map[listKey]*listGroup
}

var _ client.Reader = (*listedReader)(nil)

// listKey is one LIST: a kind in a namespace ("" for cluster-scoped kinds).
type listKey struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// listGroup is the outcome of one LIST, made once.
type listGroup struct {
	once    sync.Once
	objects map[string]*unstructured.Unstructured // by name; nil when the LIST failed
}

// newListedReader returns a reader that GETs everything until expect plans
// its LISTs.
func newListedReader(direct client.Reader) *listedReader {
	return &listedReader{direct: direct, groups: map[listKey]*listGroup{}}
}

// expect plans the LISTs for desired, whose IDs (default namespaces
// applied, zero for an unknown kind) are ids, in the same order.
func (r *listedReader) expect(desired []*unstructured.Unstructured, ids []object.ID) {
	counts := map[listKey]int{}
	for i, obj := range desired {
		if i < len(ids) && ids[i].Kind != "" {
			counts[listKey{obj.GroupVersionKind(), ids[i].Namespace}]++
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, n := range counts {
		if n >= listThreshold && r.groups[k] == nil {
			r.groups[k] = &listGroup{}
		}
	}
}

// Get answers from the LIST of obj's group when it has one, else with a GET.
func (r *listedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return r.direct.Get(ctx, key, obj, opts...)
	}
	lk := listKey{u.GroupVersionKind(), key.Namespace}
	r.mu.Lock()
	g := r.groups[lk]
	r.mu.Unlock()
	if g == nil {
		return r.direct.Get(ctx, key, obj, opts...)
	}
	g.once.Do(func() { g.objects = r.list(ctx, lk) })
	if g.objects == nil {
		return r.direct.Get(ctx, key, obj, opts...)
	}
	live, ok := g.objects[key.Name]
	if !ok {
		gr := schema.GroupResource{Group: lk.gvk.Group, Resource: lk.gvk.Kind}
		return apierrors.NewNotFound(gr, key.Name)
	}
	live.DeepCopyInto(u)
	return nil
}

// List is the direct reader's.
func (r *listedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.direct.List(ctx, list, opts...)
}

// list reads one group page by page; nil when any page fails.
func (r *listedReader) list(ctx context.Context, k listKey) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	cont := ""
	for {
		page := &unstructured.UnstructuredList{}
		page.SetGroupVersionKind(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
		opts := []client.ListOption{client.Limit(listPageSize), client.Continue(cont)}
		if k.namespace != "" {
			opts = append(opts, client.InNamespace(k.namespace))
		}
		if err := r.direct.List(ctx, page, opts...); err != nil {
			return nil
		}
		for i := range page.Items {
			item := &page.Items[i]
			item.SetGroupVersionKind(k.gvk)
			out[item.GetName()] = item
		}
		if cont = page.GetContinue(); cont == "" {
			return out
		}
	}
}
