// Package objwatch is the one way gitsync waits on objects: list, then watch
// from that list's resourceVersion (re-listing when a watch ends early),
// restricted to one object by name where it can be. Health waits, CRD
// establishment, recreation and prune's deletion waits all start here.
package objwatch

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ListWatch lists and watches ri, restricted to one object when name is set.
func ListWatch(ri dynamic.ResourceInterface, name string) cache.ListerWatcher {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			byName(&o, name)
			return ri.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			byName(&o, name)
			return ri.Watch(ctx, o)
		},
	}
}

// MetadataListWatch lists and watches the metadata of gvk's objects in
// namespace through c, restricted to one object when name is set: what a
// wait needs when it reads only UIDs and finalizers, for any kind.
func MetadataListWatch(c client.WithWatch, gvk schema.GroupVersionKind, namespace, name string) cache.ListerWatcher {
	newList := func() *metav1.PartialObjectMetadataList {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		return list
	}
	opts := func(o metav1.ListOptions) *client.ListOptions {
		byName(&o, name)
		return &client.ListOptions{Namespace: namespace, Limit: o.Limit, Continue: o.Continue, Raw: &o}
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list := newList()
			return list, c.List(ctx, list, opts(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, newList(), opts(o))
		},
	}
}

func byName(o *metav1.ListOptions, name string) {
	if name != "" {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}
}

// UntilGone waits until lw holds no object with uid: deleted, or replaced
// by one of another UID. exemplar is the type lw lists (for example
// &unstructured.Unstructured{} or &metav1.PartialObjectMetadata{}). When ctx
// ends first, last is the newest state of the object seen, so the caller can
// say what holds it (finalizers).
func UntilGone(ctx context.Context, lw cache.ListerWatcher, exemplar runtime.Object, uid types.UID) (last metav1.Object, err error) {
	present := func(o any) metav1.Object {
		if m, ok := o.(metav1.Object); ok && m.GetUID() == uid {
			return m
		}
		return nil
	}
	gone := func(store cache.Store) (bool, error) {
		for _, o := range store.List() {
			if m := present(o); m != nil {
				last = m
				return false, nil
			}
		}
		return true, nil
	}
	_, err = watchtools.UntilWithSync(ctx, lw, exemplar, gone, func(ev watch.Event) (bool, error) {
		m, ok := ev.Object.(metav1.Object)
		switch {
		case !ok:
			return false, nil
		case m.GetUID() != uid:
			// Another object of that name: ours is gone.
			return true, nil
		case ev.Type == watch.Deleted:
			return true, nil
		}
		last = m
		return false, nil
	})
	if err != nil {
		return last, fmt.Errorf("wait for deletion: %w", err)
	}
	return nil, nil
}
