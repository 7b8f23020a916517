package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/object"
)

// Orphan releases every object of inv from the sync name/namespace
// (deletionPolicy: Orphan): it removes the owner labels, so the objects keep
// running and no later prune touches them. Each object is changed with one
// JSON patch that first tests its UID and both labels, so an object
// recreated or relabelled by someone else is left exactly as it is (kept).
// The result's Remaining holds the objects that failed; the error joins
// their causes. c should read from the apiserver directly: a rejected patch
// is classified by reading the object.
func Orphan(ctx context.Context, c client.Client, inv *Inventory, name, namespace string) (*PruneResult, error) {
	if name == "" {
		return nil, errors.New("orphan: owner name is required")
	}
	inv = New(inv.entries()...)
	r := newResolver(nil, c)
	out := make([]PruneEntry, inv.Len())
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(DefaultPruneOptions().concurrency())
	for i, e := range inv.Entries {
		g.Go(func() error {
			out[i] = orphanOne(gctx, c, r, e, name, namespace)
			return nil
		})
	}
	_ = g.Wait() // orphanOne reports per object
	res := &PruneResult{Entries: out}
	var stay []Entry
	var errs []error
	for i, e := range out {
		if e.Action == ActionFailed || e.Action == ActionUnknown {
			stay = append(stay, inv.Entries[i])
			errs = append(errs, e.Err)
		}
	}
	res.Remaining = New(stay...)
	return res, errors.Join(errs...)
}

func orphanOne(ctx context.Context, c client.Client, r resolver, e Entry, name, namespace string) PruneEntry {
	failed := func(err error) PruneEntry {
		return PruneEntry{ID: e.ID, Action: ActionFailed, Reason: "could not remove owner labels", Err: objectError(e.ID, "orphan", err)}
	}
	m, err := r.resolve(e)
	if err != nil {
		if isNoMatch(err) {
			return unknown(e)
		}
		return failed(err)
	}
	if e.Pending {
		// No UID was recorded: the patch tests the UID of the object that
		// carries exactly our labels now.
		live, err := getMeta(ctx, c, m.GVK, e.ID)
		served, serr := kindServed(ctx, c, m.GVK, e.ID.Namespace, err)
		switch {
		case serr != nil:
			return failed(serr)
		case !served:
			return unknown(e)
		case apierrors.IsNotFound(err):
			return PruneEntry{ID: e.ID, Action: ActionAbsent, Reason: "recorded as pending, never created"}
		case err != nil:
			return failed(err)
		case !object.OwnedBy(live.GetLabels(), name, namespace):
			return PruneEntry{ID: e.ID, Action: ActionKept, Reason: "recorded as pending, and the live object does not carry this sync's owner labels"}
		}
		e.UID = live.GetUID()
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(m.GVK)
	obj.SetNamespace(e.ID.Namespace)
	obj.SetName(e.ID.Name)
	patch, err := orphanPatch(e.UID, name, namespace)
	if err != nil {
		return failed(err)
	}
	err = c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(v1.FieldManager))
	switch {
	case err == nil:
		return PruneEntry{ID: e.ID, Action: ActionOrphaned, Reason: "owner labels removed"}
	case apierrors.IsNotFound(err):
		switch served, serr := kindServed(ctx, c, m.GVK, e.ID.Namespace, err); {
		case serr != nil:
			return failed(serr)
		case !served:
			return unknown(e)
		}
		return PruneEntry{ID: e.ID, Action: ActionAbsent, Reason: "already deleted"}
	case apierrors.IsInvalid(err):
		switch action, ok := notOwnedAnyMore(ctx, c, m.GVK, e, name, namespace); {
		case ok && action == ActionKept:
			return PruneEntry{ID: e.ID, Action: ActionKept, Reason: "not ours any more (recreated or relabelled by someone else)"}
		case ok:
			return PruneEntry{ID: e.ID, Action: action, Reason: "already deleted"}
		}
	}
	return failed(err)
}

// unknown is the outcome for an object whose kind is not served: kept in
// the inventory until it is, then orphaned.
func unknown(e Entry) PruneEntry {
	return PruneEntry{ID: e.ID, Action: ActionUnknown, Reason: ErrKindNotServed.Error(), Err: objectError(e.ID, "orphan", ErrKindNotServed)}
}

// orphanPatch tests that the object is still the recorded one with our
// labels, then removes the labels — atomically, in one request.
func orphanPatch(uid types.UID, name, namespace string) ([]byte, error) {
	type op struct {
		Op    string  `json:"op"`
		Path  string  `json:"path"`
		Value *string `json:"value,omitempty"`
	}
	nameLabel := "/metadata/labels/" + jsonPointerEscape(v1.LabelName)
	namespaceLabel := "/metadata/labels/" + jsonPointerEscape(v1.LabelNamespace)
	return json.Marshal([]op{
		{Op: "test", Path: "/metadata/uid", Value: ptrTo(string(uid))},
		{Op: "test", Path: nameLabel, Value: &name},
		{Op: "test", Path: namespaceLabel, Value: &namespace},
		{Op: "remove", Path: nameLabel},
		{Op: "remove", Path: namespaceLabel},
	})
}

func jsonPointerEscape(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// notOwnedAnyMore reads the object after a rejected patch to tell a failed
// test (someone else's object now: kept) from other rejections (failed).
// The apiserver reports both as 422 without a stable way to tell them apart.
func notOwnedAnyMore(ctx context.Context, c client.Reader, gvk schema.GroupVersionKind, e Entry, name, namespace string) (Action, bool) {
	live, err := getMeta(ctx, c, gvk, e.ID)
	switch {
	case isGone(err):
		return ActionAbsent, true
	case err != nil:
		return "", false
	case live.GetUID() != e.UID || !object.OwnedBy(live.GetLabels(), name, namespace):
		return ActionKept, true
	}
	return "", false
}
