package inventory

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxConflictRetries bounds re-checks when an object changes between the
// plan's read and the delete.
const maxConflictRetries = 3

// deleteOwned deletes d with UID and resourceVersion preconditions, so the
// object deleted is exactly the one whose ownership was checked. When it
// changed meanwhile (a status update, or a relabel), it is read again and
// re-checked. A returned entry with an Action is final (kept or absent); an
// empty one means the delete was accepted.
func (p *PrunePlan) deleteOwned(ctx context.Context, c client.Client, d Deletion) (PruneEntry, error) {
	rv := d.ResourceVersion
	for attempt := 0; ; attempt++ {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(d.GVK)
		obj.SetNamespace(d.ID.Namespace)
		obj.SetName(d.ID.Name)
		opts := &client.DeleteOptions{
			Preconditions:     &metav1.Preconditions{UID: &d.UID, ResourceVersion: &rv},
			PropagationPolicy: ptrTo(metav1.DeletePropagationBackground),
		}
		if p.opts.DryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		err := c.Delete(ctx, obj, opts)
		switch {
		case err == nil:
			return PruneEntry{}, nil
		case apierrors.IsNotFound(err):
			return PruneEntry{ID: d.ID, Action: ActionAbsent, Reason: "deleted by someone else"}, nil
		case !apierrors.IsConflict(err) || attempt == maxConflictRetries:
			return PruneEntry{}, err
		}
		live, err := getMeta(ctx, c, d.GVK, d.ID)
		if err != nil {
			if isGone(err) {
				return PruneEntry{ID: d.ID, Action: ActionAbsent, Reason: "deleted by someone else"}, nil
			}
			return PruneEntry{}, fmt.Errorf("re-read after conflict: %w", err)
		}
		if d.entry.Pending && live.GetUID() != d.UID {
			return PruneEntry{ID: d.ID, Action: ActionKept, Reason: "recreated by someone else since the plan"}, nil
		}
		if reason := notOurs(live, d.entry, p.opts.owner()); reason != "" {
			return PruneEntry{ID: d.ID, Action: ActionKept, Reason: reason + " since the plan"}, nil
		}
		rv = live.GetResourceVersion()
	}
}

func ptrTo[T any](v T) *T { return &v }
