package inventory

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/object"
)

// getMeta reads only an object's metadata: all that ownership checks need.
func getMeta(ctx context.Context, c client.Reader, gvk schema.GroupVersionKind, id object.ID) (*metav1.PartialObjectMetadata, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	if err := c.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// isGone reports whether err means the object (or its whole kind) is gone.
func isGone(err error) bool {
	return apierrors.IsNotFound(err) || isNoMatch(err)
}

func isNoMatch(err error) bool {
	return meta.IsNoMatchError(err)
}

// kindServed tells, after reading an object failed with readErr, whether
// its kind is still served. A 404 does not say which: the object may be
// gone, or the whole resource (a CRD whose versions are no longer served,
// while a RESTMapper still has it). A list of the kind, one item at most,
// answers: it fails with 404 only when the resource is not served. A
// denied list cannot tell; the kind then counts as served (the 404 is taken
// to be the object's, as always). An error other than a 404 or a
// RESTMapper miss is returned for readErr's caller to report.
func kindServed(ctx context.Context, c client.Reader, gvk schema.GroupVersionKind, namespace string, readErr error) (bool, error) {
	switch {
	case isNoMatch(readErr):
		return false, nil
	case !apierrors.IsNotFound(readErr):
		return true, nil
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(listGVK(gvk))
	err := c.List(ctx, list, client.InNamespace(namespace), client.Limit(1))
	switch {
	case err == nil, apierrors.IsForbidden(err):
		return true, nil
	case apierrors.IsNotFound(err), isNoMatch(err):
		return false, nil
	}
	return false, fmt.Errorf("list %s to tell a missing object from a kind not served: %w", gvk.Kind, err)
}

// notOurs returns why a live object may not be deleted by owner under
// inventory entry e ("" when it may): it was recreated (new UID),
// relabelled, or opted out.
func notOurs(live metav1.Object, e Entry, owner object.Owner) string {
	labels := live.GetLabels()
	switch {
	case e.Pending:
		// Recorded before its apply, so without a UID: only exactly our
		// owner labels say the apply ran and the object is ours.
		if !owner.Owns(labels) {
			return "recorded as pending, and the live object does not carry this sync's owner labels (" + ownerLabelValues(labels) + ")"
		}
	case e.UID == "":
		return "no UID recorded in the inventory"
	case live.GetUID() != e.UID:
		return fmt.Sprintf("recreated by someone else (live UID %s, recorded %s)", live.GetUID(), e.UID)
	case !owner.OwnsRecorded(labels):
		return "owner labels changed (" + ownerLabelValues(labels) + ")"
	}
	if PruneDisabled(live.GetAnnotations()) {
		return fmt.Sprintf("annotated %s: %s", v1.AnnotationPrune, v1.PruneDisabled)
	}
	return ""
}

func ownerLabelValues(labels map[string]string) string {
	return fmt.Sprintf("%s=%s, %s=%s, %s=%s",
		v1.LabelName, labelValue(labels, v1.LabelName), v1.LabelNamespace, labelValue(labels, v1.LabelNamespace),
		v1.LabelOwnerKind, labelValue(labels, v1.LabelOwnerKind))
}

func labelValue(labels map[string]string, key string) string {
	v, ok := labels[key]
	switch {
	case !ok:
		return "<none>"
	case v == "":
		return `""`
	}
	return v
}

// PruneDisabled reports whether annotations opt an object out of pruning.
func PruneDisabled(annotations map[string]string) bool {
	return annotations[v1.AnnotationPrune] == v1.PruneDisabled
}
