package inventory

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"

	"gitsync.dev/gitsync/object"
)

// PruneOptions configure Plan and the Execute of its plan.
type PruneOptions struct {
	// Name and Namespace identify the owning sync; only objects carrying
	// exactly these owner labels are pruned. Name is required.
	Name, Namespace string
	// CLI says the owner is a CLI inventory (`gitsync apply --name`), whose
	// objects carry v1.LabelOwnerKind, rather than the GitSync Namespace/Name.
	CLI bool

	// SyncSucceeded must be set by the caller only when fetch, render and
	// apply of the new revision all succeeded. Without it Plan refuses
	// (ErrSyncIncomplete): a partial desired set would prune live objects.
	SyncSucceeded bool
	// AllowEmpty lets an empty desired inventory prune everything. Without
	// it an empty render is treated as a broken render (ErrEmptyDesired).
	// With it the MaxShare limit does not apply to an empty render either:
	// the user said "empty is legitimate".
	AllowEmpty bool
	// MaxShare is the largest share (0..1] of the previous inventory one
	// sync may prune; above it Plan refuses with ErrPruneLimit and nothing
	// is deleted. It catches renders that silently lost most objects. 0
	// turns the limit off.
	MaxShare float64
	// MaxShareMinStale is how many stale objects may always be pruned
	// whatever MaxShare says: a small repository legitimately replaces most
	// of its few objects, while the limit exists for renders that silently
	// lost much of a large set.
	MaxShareMinStale int

	// AllowNamespaces lets stale Namespaces be deleted; deleting one deletes
	// everything in it, so it is off by default. Even when allowed, a
	// Namespace holding anything this plan does not delete is kept.
	AllowNamespaces bool
	// AllowCRDs lets stale CustomResourceDefinitions be deleted; deleting
	// one deletes all its custom resources cluster-wide, so it is off by
	// default. Even when allowed, a CRD with custom resources this plan does
	// not delete is kept.
	AllowCRDs bool

	// Discovery lists the namespaced kinds when a Namespace may be deleted,
	// to check that it holds nothing foreign. Without it stale Namespaces
	// are kept.
	Discovery discovery.ServerResourcesInterface
	// Mapper resolves kinds to resources and scopes. When nil, the client's
	// own RESTMapper is used if it has one, else each entry's Version.
	Mapper meta.RESTMapper

	// Timeout bounds how long Execute waits for one stage's objects to be
	// gone (objects with finalizers can take a while); an object still
	// present after it is reported failed and stays in the inventory.
	Timeout time.Duration
	// DryRun sends deletes as server-side dry runs: admission and RBAC are
	// checked, nothing is deleted, nothing is waited for.
	DryRun bool
	// Concurrency bounds parallel API requests in Plan and Execute.
	Concurrency int
	// Protect names what is never pruned without explicit consent: the
	// GitSync being synced, the GitSync CRD, the agent's own workload,
	// ServiceAccount, RBAC and Namespace. Its zero value protects the CRD.
	Protect Protection

	// deleting is set by ForDeletion: the share limit applies to the empty
	// desired set of a deleted sync.
	deleting bool
}

// DefaultPruneOptions returns the safe defaults: refuse unless told the sync
// succeeded, no empty renders, at most half the inventory at once, keep
// Namespaces and CRDs, wait one minute per stage. The share limit starts
// counting above ten stale objects.
func DefaultPruneOptions() PruneOptions {
	return PruneOptions{
		MaxShare:         0.5,
		MaxShareMinStale: 10,
		Timeout:          time.Minute,
		Concurrency:      8,
	}
}

// ForDeletion returns the options for pruning the whole inventory because
// the owning sync itself is being deleted (deletionPolicy: Delete): there
// is no new revision whose success or emptiness matters. Every other rail
// still holds: ownership, UID, annotations, protection, Namespace/CRD rules
// and the share limit, because a GitSync deleted by its parent's prune (an
// app of apps losing one file) must not take a whole application with it
// unannounced. MaxShare 0 (or the GitSync's prune-max-share annotation
// "1") lets an intended deletion through.
func (o PruneOptions) ForDeletion() PruneOptions {
	o.SyncSucceeded = true
	o.AllowEmpty = true
	o.deleting = true
	return o
}

// owner is the sync whose objects this prune may delete.
func (o PruneOptions) owner() object.Owner {
	return object.Owner{Namespace: o.Namespace, Name: o.Name, CLI: o.CLI}
}

func (o PruneOptions) concurrency() int {
	if o.Concurrency < 1 {
		return 1
	}
	return o.Concurrency
}
