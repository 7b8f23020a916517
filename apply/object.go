package apply

import (
	"context"
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/diff"
	"gitsync.dev/gitsync/drift"
	"gitsync.dev/gitsync/object"
)

// applyOne plans and, unless the object is unchanged or this is a dry run,
// writes one object. It returns the object's entry, the resulting live object
// (nil when unknown) and an error only when the whole run must stop.
//
// A dry run takes the same path: write sends server-side dry-runs, so a
// change the apiserver would refuse fails its entry with the error the real
// apply would report (*ImmutableError, *ConflictError, an invalid object),
// and fields of TakeOverManagers are taken back as they would be. The
// returned object of a dry run is the live one (nil for a create).
//
// fresh says the object's kind was created by this run (its CRD is new), so
// no object of it can exist yet: the live read is skipped, which spares
// starting an informer for the kind in the middle of a bulk create.
func (a *Applier) applyOne(ctx context.Context, obj *unstructured.Unstructured, fresh bool) (Entry, *unstructured.Unstructured, error) {
	p, e, err := a.plan(ctx, obj, fresh)
	if err != nil || e.Action != "" {
		return e, p.live, err
	}
	out, err := a.write(ctx, p, &e)
	if err != nil {
		err = secretSafe(e.ID, p.desired, err) // redact.go
		if fatal(err) {
			return e, nil, fmt.Errorf("%s apply failed: %w", e.Subject, err)
		}
		outcome := "apply failed"
		if a.opts.DryRun {
			outcome = "would fail"
		}
		e.Action, e.Err = Failed, fmt.Errorf("%s %s: %w", e.Subject, outcome, err)
		return e, nil, nil
	}
	e.Action = p.action()
	if e.Action == Created && existedBefore(out, a.opts.FieldManager) {
		e.Action = Configured // adopted: the live reader did not have it
	}
	if a.opts.DryRun {
		return e, p.live, nil
	}
	e.UID = out.GetUID()
	return e, out, nil
}

// planned is one object ready to be written.
type planned struct {
	desired *unstructured.Unstructured // with namespace and owner labels
	live    *unstructured.Unstructured // nil when the object does not exist
	mapping *meta.RESTMapping
}

func (p planned) action() Action {
	if p.live == nil {
		return Created
	}
	return Configured
}

// plan resolves the object's kind, reads the live object and decides whether
// it must be written. A returned entry with an Action set is final (unchanged,
// skipped or failed); an error means the whole run must stop.
func (a *Applier) plan(ctx context.Context, obj *unstructured.Unstructured, fresh bool) (planned, Entry, error) {
	gvk := obj.GroupVersionKind()
	id := idOf(obj, a.opts.DefaultNamespace)
	e := Entry{ID: id, Subject: id.String()}
	mapping, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		e.Action, e.Err = Skipped, fmt.Errorf("%s skipped: %w", e.Subject, &UnknownKindError{Kind: gvk.Kind, APIVersion: gvk.GroupVersion().String(), Err: err})
		return planned{}, e, nil
	}
	if err != nil {
		return a.failPlan(e, "apply", err)
	}
	desired := a.prepare(obj, mapping)
	e.ID = object.IDOf(desired)
	e.Subject = e.ID.String()
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace && desired.GetNamespace() == "" {
		e.Action, e.Err = Failed, fmt.Errorf("%s apply failed: namespaced object without namespace and no default namespace", e.Subject)
		return planned{}, e, nil
	}
	var live *unstructured.Unstructured
	if !fresh {
		if live, err = a.read(ctx, desired); err != nil {
			return a.failPlan(e, "read", err)
		}
	}
	policy, err := drift.PolicyOf(desired.GetAnnotations())
	if err != nil {
		e.Action, e.Err = Failed, fmt.Errorf("%s apply failed: %w", e.Subject, err)
		return planned{}, e, nil
	}
	if policy == drift.Disabled {
		return planned{live: live}, a.leftAlone(e, live), nil
	}
	if err := a.ownerConflict(e.Subject, live); err != nil {
		e.Action, e.Err = Failed, err
		return planned{}, e, nil
	}
	if policy == drift.CreateOnly {
		if live, err = a.readCreateOnly(ctx, desired, live, fresh); err != nil {
			return a.failPlan(e, "read", err)
		}
		if live != nil {
			e.Action, e.UID, e.Reason = Unchanged, live.GetUID(), policy.Reason()
			return planned{live: live}, e, nil
		}
	}
	if len(a.opts.OwnerLabels) == 0 {
		keepOwnerLabels(desired, live)
	}
	desired, e.Skips = a.opts.Ignore.Omit(desired, live, diff.AppliedFields(live, a.opts.FieldManager))
	p := planned{desired: desired, live: live, mapping: mapping}
	res, err := a.decide(ctx, desired, live)
	if err != nil {
		return a.failPlan(e, "diff", err)
	}
	if a.opts.Diff {
		e.Diff = res.Text
	}
	switch {
	case res.Verdict == diff.InSync:
		e.Action, e.UID = Unchanged, live.GetUID()
	case a.opts.DetectOnly:
		a.detected(&e, live, res)
	}
	return p, e, nil
}

// leftAlone is the entry of an object annotated gitsync.dev/apply:
// disabled. It keeps the live UID (and so its place in the inventory, and
// its prune when it leaves Git) only when live carries this sync's owner
// labels: gitsync applied it before the annotation.
func (a *Applier) leftAlone(e Entry, live *unstructured.Unstructured) Entry {
	e.Action, e.Reason = Ignored, drift.Disabled.Reason()
	if live != nil && len(a.opts.OwnerLabels) > 0 {
		other, owned := object.OwnerOf(live.GetLabels())
		me, _ := object.OwnerOf(a.opts.OwnerLabels)
		if owned && other == me {
			e.UID = live.GetUID()
		}
	}
	return e
}

// readCreateOnly confirms that a create-only object the live reader does
// not have is absent: a cache of managed objects misses one that exists
// without owner labels, and creating it would overwrite it.
func (a *Applier) readCreateOnly(ctx context.Context, desired, live *unstructured.Unstructured, fresh bool) (*unstructured.Unstructured, error) {
	if live != nil || fresh || a.direct == nil || a.direct == a.live {
		return live, nil
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(desired.GroupVersionKind())
	err := a.direct.Get(ctx, client.ObjectKeyFromObject(desired), got)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return got, nil
}

// detected turns the entry of an object that differs from Git into a
// Drifted one that is not written (Options.DetectOnly).
func (a *Applier) detected(e *Entry, live *unstructured.Unstructured, res diff.Result) {
	e.Action, e.Fields = Drifted, res.Fields
	if live == nil {
		e.Reason = "missing from the cluster"
		return
	}
	e.UID = live.GetUID()
}

// failPlan fails the entry, or the whole run when err says the apiserver is unreachable.
func (a *Applier) failPlan(e Entry, verb string, err error) (planned, Entry, error) {
	err = fmt.Errorf("%s %s failed: %w", e.Subject, verb, secretSafe(e.ID, nil, err))
	if fatal(err) {
		return planned{}, e, err
	}
	e.Action, e.Err = Failed, err
	return planned{}, e, nil
}

// prepare returns a copy of obj as it is applied: the namespace defaulted (or
// cleared for cluster-scoped kinds) and the owner labels stamped.
func (a *Applier) prepare(obj *unstructured.Unstructured, mapping *meta.RESTMapping) *unstructured.Unstructured {
	out := WithOwnerLabels(obj, a.opts.OwnerLabels)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if out.GetNamespace() == "" {
			out.SetNamespace(a.opts.DefaultNamespace)
		}
	} else {
		out.SetNamespace("")
	}
	return out
}

// WithOwnerLabels returns a copy of obj carrying labels over its own, as
// Apply stamps Options.OwnerLabels on every object it sends; no labels
// leave the copy's labels as they are.
func WithOwnerLabels(obj *unstructured.Unstructured, labels map[string]string) *unstructured.Unstructured {
	out := obj.DeepCopy()
	if len(labels) > 0 {
		merged := out.GetLabels()
		if merged == nil {
			merged = map[string]string{}
		}
		maps.Copy(merged, labels)
		out.SetLabels(merged)
	}
	return out
}

// keepOwnerLabels copies the owner labels live carries into desired, so an
// apply that claims no ownership (no OwnerLabels) neither removes them nor
// shows their removal as a change.
func keepOwnerLabels(desired, live *unstructured.Unstructured) {
	if live == nil {
		return
	}
	labels := desired.GetLabels()
	for _, k := range object.OwnerLabelKeys() {
		v, ok := live.GetLabels()[k]
		if !ok {
			continue
		}
		if labels == nil {
			labels = map[string]string{}
		}
		labels[k] = v
	}
	if labels != nil {
		desired.SetLabels(labels)
	}
}

// read returns the live object, or nil when it does not exist.
func (a *Applier) read(ctx context.Context, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(desired.GroupVersionKind())
	err := a.live.Get(ctx, client.ObjectKeyFromObject(desired), live)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return live, nil
}
