package inventory

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/object"
)

// Deletion is one object a plan deletes, as it was read live.
type Deletion struct {
	ID  object.ID
	GVK schema.GroupVersionKind
	// UID and ResourceVersion are the deletion's preconditions: the object
	// must still be the one that was checked.
	UID             types.UID
	ResourceVersion string
	Stage           Stage
	// entry is the recorded inventory entry, kept in Remaining on failure.
	entry Entry
}

// PrunePlan is what Plan decided: the objects to delete in stage order and,
// for every other stale object, why it is left alone.
type PrunePlan struct {
	// Deletions are in the order Execute deletes them (stage, then ID).
	Deletions []Deletion
	// Skipped has an entry (kept, absent or failed, with a reason) for every
	// stale object that is not deleted.
	Skipped []PruneEntry
	// Desired is the new inventory the plan was made against.
	Desired *Inventory

	opts     PruneOptions
	resolver resolver
	// failed are stale entries that could not be checked (failed, or of a
	// kind not served): they stay.
	failed []Entry
}

// Plan decides which objects of old that are missing from desired may be
// deleted. Each is read live and deleted only if it still carries this sync's
// owner labels, has the recorded UID and is not annotated prune: disabled;
// Namespaces and CRDs also need permission and must hold nothing foreign.
//
// Plan refuses with a *RefusedError (ErrSyncIncomplete, ErrEmptyDesired,
// ErrPruneLimit) when something is stale and the safety rails say no. c
// should read from the apiserver directly (a cache would start informers for
// every stale kind).
func Plan(ctx context.Context, c client.Reader, old, desired *Inventory, opts PruneOptions) (*PrunePlan, error) {
	if opts.Name == "" {
		return nil, errors.New("prune plan: owner name is required")
	}
	old, desired = New(old.entries()...), New(desired.entries()...)
	stale := old.Diff(desired)
	p := &PrunePlan{Desired: desired, opts: opts, resolver: newResolver(opts.Mapper, c)}
	if len(stale) == 0 {
		return p, nil
	}
	if err := checkRails(len(stale), old, desired, opts); err != nil {
		return nil, err
	}

	checks := make([]check, len(stale))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.concurrency())
	for i, e := range stale {
		g.Go(func() error {
			checks[i] = p.inspect(gctx, c, e)
			return nil
		})
	}
	_ = g.Wait() // inspect reports errors per object

	var definitions []check
	for _, ch := range checks {
		switch {
		case ch.skip != nil:
			p.addSkip(ch.entry, *ch.skip)
		case ch.deletion.Stage == StageDefinitions:
			definitions = append(definitions, ch)
		default:
			p.Deletions = append(p.Deletions, ch.deletion)
		}
	}
	// Definitions are checked against the deletion set built so far: they
	// may only cascade to objects this plan deletes anyway.
	deleting := deletionSet(p.Deletions)
	for _, ch := range definitions {
		reason, err := p.definitionBlocked(ctx, c, ch.deletion, deleting)
		switch {
		case err != nil:
			p.addSkip(ch.entry, PruneEntry{ID: ch.entry.ID, Action: ActionFailed, Reason: "could not check contents", Err: objectError(ch.entry.ID, "prune", err)})
		case reason != "":
			p.addSkip(ch.entry, PruneEntry{ID: ch.entry.ID, Action: ActionKept, Reason: reason})
		default:
			p.Deletions = append(p.Deletions, ch.deletion)
		}
	}
	sortDeletions(p.Deletions)
	return p, nil
}

// checkRails applies the gates that refuse a whole prune.
func checkRails(stale int, old, desired *Inventory, opts PruneOptions) error {
	refuse := func(cause error) error {
		return &RefusedError{Cause: cause, Stale: stale, Total: old.Len(), MaxShare: opts.MaxShare, Keep: old.Union(desired)}
	}
	if !opts.SyncSucceeded {
		return refuse(ErrSyncIncomplete)
	}
	empty := desired.Len() == 0
	if empty && !opts.AllowEmpty {
		return refuse(ErrEmptyDesired)
	}
	if opts.MaxShare > 0 && (!empty || opts.deleting) && stale > opts.MaxShareMinStale && float64(stale) > opts.MaxShare*float64(old.Len()) {
		return refuse(ErrPruneLimit)
	}
	return nil
}

// check is the outcome of inspecting one stale entry: a deletion or a skip.
type check struct {
	entry    Entry
	deletion Deletion
	skip     *PruneEntry
}

func (p *PrunePlan) addSkip(e Entry, s PruneEntry) {
	p.Skipped = append(p.Skipped, s)
	if s.Action == ActionFailed || s.Action == ActionUnknown {
		p.failed = append(p.failed, e)
	}
}

// inspect reads one stale object live and decides whether it may go.
func (p *PrunePlan) inspect(ctx context.Context, c client.Reader, e Entry) check {
	skip := func(a Action, reason string, err error) check {
		if err != nil {
			err = objectError(e.ID, "prune", err)
		}
		return check{entry: e, skip: &PruneEntry{ID: e.ID, Action: a, Reason: reason, Err: err}}
	}
	m, err := p.resolver.resolve(e)
	if err != nil {
		if isNoMatch(err) {
			return skip(ActionUnknown, ErrKindNotServed.Error(), ErrKindNotServed)
		}
		return skip(ActionFailed, "could not resolve kind", err)
	}
	live, err := getMeta(ctx, c, m.GVK, e.ID)
	if err != nil {
		switch served, serr := kindServed(ctx, c, m.GVK, e.ID.Namespace, err); {
		case serr != nil:
			return skip(ActionFailed, "could not read object", serr)
		case !served:
			return skip(ActionUnknown, ErrKindNotServed.Error(), ErrKindNotServed)
		case apierrors.IsNotFound(err):
			return skip(ActionAbsent, "already deleted", nil)
		}
		return skip(ActionFailed, "could not read object", err)
	}
	if reason := notOurs(live, e, p.opts.owner()); reason != "" {
		return skip(ActionKept, reason, nil)
	}
	if reason := p.opts.Protect.Reason(ctx, c, e.ID, live); reason != "" {
		return skip(ActionKept, reason, nil)
	}
	stage := StageOf(e.ID)
	if reason := p.definitionNotAllowed(e.ID); reason != "" {
		return skip(ActionKept, reason, nil)
	}
	return check{entry: e, deletion: Deletion{
		ID: e.ID, GVK: m.GVK, UID: live.GetUID(), ResourceVersion: live.GetResourceVersion(), Stage: stage, entry: e,
	}}
}

// definitionNotAllowed applies the Namespace and CRD switches.
func (p *PrunePlan) definitionNotAllowed(id object.ID) string {
	switch id.GroupKind() {
	case object.NamespaceKind:
		if !p.opts.AllowNamespaces {
			return "Namespaces are pruned only when allowed (AllowNamespaces)"
		}
		if p.opts.Discovery == nil {
			return "no discovery client to check that the Namespace holds nothing foreign"
		}
	case object.CRDKind:
		if !p.opts.AllowCRDs {
			return "CustomResourceDefinitions are pruned only when allowed (AllowCRDs)"
		}
	}
	return ""
}

// definitionBlocked reports why a Namespace or CRD must stay because it
// holds objects outside deleting ("" when it may go).
func (p *PrunePlan) definitionBlocked(ctx context.Context, c client.Reader, d Deletion, deleting map[object.ID]types.UID) (string, error) {
	switch d.ID.GroupKind() {
	case object.NamespaceKind:
		return namespaceBlocked(ctx, c, p.opts.Discovery, d.ID.Name, deleting)
	case object.CRDKind:
		return crdBlocked(ctx, c, d.ID.Name, deleting)
	}
	return "", nil
}

func deletionSet(ds []Deletion) map[object.ID]types.UID {
	set := make(map[object.ID]types.UID, len(ds))
	for _, d := range ds {
		set[d.ID] = d.UID
	}
	return set
}

// String summarises the plan for logs and the CLI.
func (p *PrunePlan) String() string {
	return fmt.Sprintf("prune plan: %d to delete, %d skipped", len(p.Deletions), len(p.Skipped))
}
