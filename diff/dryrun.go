package diff

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"gitsync.dev/gitsync/object"
)

// dryRun asks the server what desired would make of the live object: a
// server-side apply as the field manager, forcing ownership (the applier takes
// fields back from people's edits, so drift is measured against that).
func (d *Differ) dryRun(ctx context.Context, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	id := object.IDOf(desired)
	if d.client == nil {
		return nil, &DryRunError{ID: id, Err: ErrNoClient}
	}
	obj := desired.DeepCopy()
	err := d.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
		client.FieldOwner(d.opts.FieldManager), client.ForceOwnership, client.DryRunAll)
	if err != nil {
		return nil, &DryRunError{ID: id, Err: err}
	}
	return obj, nil
}

// volatileMeta are metadata fields that differ between a dry-run result and
// the live object without the apply changing anything the user declared.
var volatileMeta = []string{"resourceVersion", "managedFields", "generation"}

// appliedEqual reports whether the dry-run result merged equals live: the
// same values (status only when desired declares one) and the same fields
// owned by manager. Either difference means the apply would write.
func appliedEqual(desired, merged, live *unstructured.Unstructured, manager string) bool {
	_, keepStatus := desired.Object["status"]
	// kubectl's last-applied annotation is someone else's field unless
	// desired declares it: the apply leaves it as it is, and the agent's
	// cache does not keep it (livecache.CompactLive).
	_, keepLastApplied := desired.GetAnnotations()[lastApplied]
	if !equalValues(comparable(merged, keepStatus, keepLastApplied), comparable(live, keepStatus, keepLastApplied)) {
		return false
	}
	mv, mset := ownedSet(merged, manager)
	lv, lset := ownedSet(live, manager)
	if ownsNothing(mset) && ownsNothing(lset) {
		// A manifest with no fields of its own (a bare Namespace or
		// ServiceAccount without owner labels) leaves no lasting entry:
		// the apply would write nothing.
		return true
	}
	return mset != nil && lset != nil && mv == lv && mset.Equals(lset)
}

func ownsNothing(set *fieldpath.Set) bool { return set == nil || set.Empty() }

// comparable returns a shallow view of obj without volatile metadata (and
// without status unless keepStatus, without the last-applied annotation
// unless keepLastApplied).
func comparable(obj *unstructured.Unstructured, keepStatus, keepLastApplied bool) map[string]any {
	out := make(map[string]any, len(obj.Object))
	for k, v := range obj.Object {
		if k == "status" && !keepStatus {
			continue
		}
		out[k] = v
	}
	if meta, ok := obj.Object["metadata"].(map[string]any); ok {
		m := make(map[string]any, len(meta))
		for k, v := range meta {
			m[k] = v
		}
		for _, k := range volatileMeta {
			delete(m, k)
		}
		if ann, ok := m["annotations"].(map[string]any); ok && !keepLastApplied {
			if _, has := ann[lastApplied]; has {
				rest := make(map[string]any, len(ann))
				for k, v := range ann {
					if k != lastApplied {
						rest[k] = v
					}
				}
				m["annotations"] = rest
				if len(rest) == 0 {
					delete(m, "annotations")
				}
			}
		}
		out["metadata"] = m
	}
	return out
}

// ownedSet parses the fields manager applied to obj, with the entry's
// apiVersion; a nil set means manager has no Apply entry.
func ownedSet(obj *unstructured.Unstructured, manager string) (string, *fieldpath.Set) {
	for _, e := range obj.GetManagedFields() {
		if e.Manager != manager || e.Operation != "Apply" || e.Subresource != "" {
			continue
		}
		set := &fieldpath.Set{}
		if e.FieldsV1 != nil {
			if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
				return "", nil
			}
		}
		return e.APIVersion, set
	}
	return "", nil
}

// ownershipNote says, as comment lines for a text diff, which fields the apply
// would take over from other managers and which manager would release.
func ownershipNote(merged, live *unstructured.Unstructured, manager string) string {
	_, after := ownedSet(merged, manager)
	_, before := ownedSet(live, manager)
	if after == nil {
		return ""
	}
	if before == nil {
		before = &fieldpath.Set{}
	}
	var b strings.Builder
	after.Difference(before).Leaves().Iterate(func(p fieldpath.Path) {
		if from := ownersOf(live, manager, p); from != "" {
			fmt.Fprintf(&b, "# %s takes %s from %s\n", manager, p, from)
		}
	})
	before.Difference(after).Leaves().Iterate(func(p fieldpath.Path) {
		fmt.Fprintf(&b, "# %s releases %s\n", manager, p)
	})
	return b.String()
}

// ownersOf names the managers other than manager that own path p in obj.
func ownersOf(obj *unstructured.Unstructured, manager string, p fieldpath.Path) string {
	var names []string
	for _, e := range obj.GetManagedFields() {
		if e.Manager == manager || e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)) == nil && set.Has(p) {
			names = append(names, e.Manager)
		}
	}
	return strings.Join(names, ", ")
}
