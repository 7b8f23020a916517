package diff

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/object"
)

// Diff compares desired, exactly as the applier will send it, with live, the
// object as the cluster (usually a watch cache) holds it; live == nil means
// the object does not exist and yields Missing without a request.
//
// The verdict is decided locally when the fields the field manager owns in
// live prove that applying desired changes nothing. Otherwise a server-side
// apply dry-run decides, and an in-sync answer is memoised for this desired
// object and live resourceVersion. Diff never writes.
func (d *Differ) Diff(ctx context.Context, desired, live *unstructured.Unstructured) (Result, error) {
	if desired == nil {
		return Result{}, errors.New("diff: desired object is nil")
	}
	if live == nil {
		res := Result{Verdict: Missing}
		if d.opts.Text {
			res.Text = Unified(object.IDOf(desired).String(), nil, desired)
		}
		return res, nil
	}
	if ownedInSync(desired, live, d.opts.FieldManager) {
		return Result{Verdict: InSync}, nil
	}
	id := object.IDOf(desired)
	key, hashed := keyOf(desired, live)
	if hashed && d.memo.has(id, key) {
		return Result{Verdict: InSync, DryRun: true, Memoised: true}, nil
	}
	merged, err := d.dryRun(ctx, desired)
	if err != nil {
		return Result{}, err
	}
	res := Result{DryRun: true, Verdict: Drifted, Merged: Mask(merged)}
	if appliedEqual(desired, merged, live, d.opts.FieldManager) {
		res.Verdict = InSync
		if hashed {
			d.memo.put(id, key)
		}
		return res, nil
	}
	res.Fields = changedFields(desired, merged, live, d.opts.FieldManager)
	if d.opts.Text {
		res.Text = Unified(id.String(), live, merged) + ownershipNote(merged, live, d.opts.FieldManager)
	}
	return res, nil
}
