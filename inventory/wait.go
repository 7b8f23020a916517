package inventory

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// waitGone waits, by watch, until the object d deleted is gone (or replaced
// by one with another UID). When ctx ends first, the error names what still
// holds it.
func waitGone(ctx context.Context, c client.WithWatch, d Deletion) error {
	sel := fields.OneTermEqualSelector("metadata.name", d.ID.Name)
	var last *metav1.PartialObjectMetadata
	for {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(listGVK(d.GVK))
		err := c.List(ctx, list, &client.ListOptions{Namespace: d.ID.Namespace, FieldSelector: sel})
		if err != nil {
			return stillPresent(ctx, d, last, err)
		}
		last = findUID(list.Items, d)
		if last == nil {
			return nil
		}
		gone, err := watchUntilGone(ctx, c, d, sel, list.ResourceVersion, &last)
		if gone {
			return nil
		}
		if err != nil || ctx.Err() != nil {
			return stillPresent(ctx, d, last, err)
		}
		// The watch ended early (expired resourceVersion, server timeout):
		// list again.
	}
}

// watchUntilGone watches from resourceVersion rv until d's object is
// deleted; false when the watch ended first. It updates *last with the
// newest state seen.
func watchUntilGone(ctx context.Context, c client.WithWatch, d Deletion, sel fields.Selector, rv string, last **metav1.PartialObjectMetadata) (bool, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(listGVK(d.GVK))
	w, err := c.Watch(ctx, list, &client.ListOptions{
		Namespace: d.ID.Namespace, FieldSelector: sel, Raw: &metav1.ListOptions{ResourceVersion: rv},
	})
	if err != nil {
		return false, err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			obj, isMeta := ev.Object.(*metav1.PartialObjectMetadata)
			switch {
			case ev.Type == watch.Error:
				return false, nil
			case !isMeta || obj.UID != d.UID:
				continue
			case ev.Type == watch.Deleted:
				return true, nil
			default:
				*last = obj
			}
		}
	}
}

func findUID(items []metav1.PartialObjectMetadata, d Deletion) *metav1.PartialObjectMetadata {
	for i := range items {
		if items[i].UID == d.UID {
			return &items[i]
		}
	}
	return nil
}

// stillPresent explains why an object outlived the wait.
func stillPresent(ctx context.Context, d Deletion, last *metav1.PartialObjectMetadata, err error) error {
	if ctx.Err() == nil {
		return fmt.Errorf("wait for deletion: %w", err)
	}
	if last != nil && len(last.Finalizers) > 0 {
		return fmt.Errorf("%w (finalizers: %s)", ErrNotGone, strings.Join(last.Finalizers, ", "))
	}
	return ErrNotGone
}
