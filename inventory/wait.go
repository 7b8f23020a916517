package inventory

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/internal/objwatch"
)

// waitGone waits, by watch, until the object d deleted is gone (or replaced
// by one with another UID). When ctx ends first, the error names what still
// holds it.
func waitGone(ctx context.Context, c client.WithWatch, d Deletion) error {
	lw := objwatch.MetadataListWatch(c, d.GVK, d.ID.Namespace, d.ID.Name)
	last, err := objwatch.UntilGone(ctx, lw, &metav1.PartialObjectMetadata{}, d.UID)
	switch {
	case err == nil:
		return nil
	case ctx.Err() == nil:
		return err
	case last != nil && len(last.GetFinalizers()) > 0:
		return fmt.Errorf("%w (finalizers: %s)", ErrNotGone, strings.Join(last.GetFinalizers(), ", "))
	}
	return ErrNotGone
}
