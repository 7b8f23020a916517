package apply

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// write server-side applies p.desired. A conflict only with managers listed
// in TakeOverManagers is retried with force (and reported in e.TookOver); an
// immutable-field rejection recreates the object when it opted in or Force is
// set. Other conflicts and immutable fields return *ConflictError and
// *ImmutableError; a missing namespace, *NamespaceMissingError; an invalid
// object, *InvalidError (see explain).
//
// In a dry run every request is a server-side dry-run and a recreation is
// only checked (a dry-run delete), so the outcome is the one the real write
// would have.
func (a *Applier) write(ctx context.Context, p planned, e *Entry) (*unstructured.Unstructured, error) {
	ri := a.resource(p)
	out, err := a.ssa(ctx, ri, p.desired, a.opts.Force)
	if ce := asConflict(err); ce != nil {
		if !a.takesOver(ce) {
			return nil, ce
		}
		out, err = a.ssa(ctx, ri, p.desired, true)
		if err == nil {
			e.TookOver = ce.Managers()
		}
	}
	if ie := asImmutable(err); ie != nil {
		if !a.mayRecreate(p.desired) || p.live == nil {
			return nil, ie
		}
		out, err = a.recreate(ctx, ri, p)
		if err != nil {
			return nil, fmt.Errorf("recreate after immutable field %s changed: %w", strings.Join(ie.Fields, ", "), err)
		}
		e.Recreated = true
	}
	return out, explain(err, p.desired.GetNamespace())
}

func (a *Applier) ssa(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured, force bool) (*unstructured.Unstructured, error) {
	return ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: a.opts.FieldManager, Force: force, DryRun: a.dryRun()})
}

// dryRun is the dryRun parameter of every write request.
func (a *Applier) dryRun() []string {
	if a.opts.DryRun {
		return []string{metav1.DryRunAll}
	}
	return nil
}

func (a *Applier) resource(p planned) dynamic.ResourceInterface {
	nri := a.dyn.Resource(p.mapping.Resource)
	if ns := p.desired.GetNamespace(); ns != "" {
		return nri.Namespace(ns)
	}
	return nri
}

// takesOver reports whether every conflicting manager is one whose fields
// gitsync takes back.
func (a *Applier) takesOver(ce *ConflictError) bool {
	for _, m := range ce.Managers() {
		if !slices.Contains(a.opts.TakeOverManagers, m) {
			return false
		}
	}
	return true
}

func (a *Applier) mayRecreate(obj *unstructured.Unstructured) bool {
	return a.opts.Force || obj.GetAnnotations()[v1.AnnotationRecreate] == "enabled"
}
