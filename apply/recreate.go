package apply

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"gitsync.dev/gitsync/internal/objwatch"
)

// recreate deletes the live object (only the very object that was read: UID
// precondition), waits by watch until it is gone and applies the desired
// object again. A dry run stops after a dry-run delete: the object still
// exists, so the apply cannot be tried.
func (a *Applier) recreate(ctx context.Context, ri dynamic.ResourceInterface, p planned) (*unstructured.Unstructured, error) {
	uid := p.live.GetUID()
	background := metav1.DeletePropagationBackground
	err := ri.Delete(ctx, p.desired.GetName(), metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid},
		PropagationPolicy: &background,
		DryRun:            a.dryRun(),
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("delete: %w", err)
	}
	if a.opts.DryRun {
		return p.desired, nil
	}
	if err := waitGone(ctx, ri, p.desired.GetName(), uid, a.opts.RecreateTimeout); err != nil {
		return nil, err
	}
	return a.ssa(ctx, ri, p.desired, a.opts.Force)
}

// waitGone watches the object until no object with that name and UID exists.
func waitGone(ctx context.Context, ri dynamic.ResourceInterface, name string, uid types.UID, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := objwatch.UntilGone(ctx, objwatch.ListWatch(ri, name), &unstructured.Unstructured{}, uid)
	return err
}
