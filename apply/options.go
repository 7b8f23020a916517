package apply

import (
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/drift"
	"gitsync.dev/gitsync/inventory"
)

// DefaultConcurrency is the number of objects applied in parallel within a
// stage. It was chosen from the benchmark in bench/ (see bench/RESULTS.md):
// beyond it the apiserver, not the client, is the bottleneck.
const DefaultConcurrency = 16

// Options configures an Applier.
type Options struct {
	// FieldManager is the server-side apply field manager: it owns every field
	// gitsync sets and so decides which fields are removed when Git drops them.
	FieldManager string
	// Concurrency bounds the objects applied in parallel within a stage.
	Concurrency int
	// Force takes ownership of fields from every other manager and allows
	// recreating objects whose immutable fields changed.
	Force bool
	// OwnerLabels are stamped on every applied object (object.OwnerLabels),
	// so pruning can prove the object is ours. When empty (a CLI apply or
	// diff without a sync name) an object keeps the owner labels its live
	// object carries: applying without a name never takes an object away
	// from the sync that owns it, and a diff of the manifests that sync
	// applied is in sync.
	OwnerLabels map[string]string
	// Recorded is the owner's stored inventory. It is consulted only for a
	// CLI owner: its objects applied before v1.LabelOwnerKind existed
	// carry the labels of the GitSync of the same name, and are the CLI's
	// when the inventory recorded their live UID.
	Recorded *inventory.Inventory
	// TakeOverManagers are the field managers of people (kubectl and friends)
	// whose fields are taken back without Force: their edits are drift.
	TakeOverManagers []string
	// DefaultNamespace is used for namespaced objects that name none.
	DefaultNamespace string
	// DryRun decides the actions without writing anything. Every object that
	// would be created or changed is sent as a server-side apply dry-run, so
	// an entry fails with the error the real apply would report (an invalid
	// object, an immutable field, a conflict), at the cost of one request per
	// such object.
	DryRun bool
	// Diff fills Entry.Diff with a masked unified diff for changed objects.
	Diff bool
	// Ignore are the sync's ignore rules (spec.drift.ignore): fields they
	// name are never reverted nor shown as drift (package drift says how
	// they are applied); Entry.Skips lists them.
	Ignore drift.Rules
	// DetectOnly reports objects that differ from Git as Drifted (with the
	// fields that differ) instead of writing them, a missing object too:
	// spec.drift.mode Detect between two revisions.
	DetectOnly bool
	// CRDTimeout bounds the wait for applied CRDs to become Established (and
	// for their kinds to appear in discovery) before the next stage.
	CRDTimeout time.Duration
	// RecreateTimeout bounds the wait for a deleted object to be gone before it
	// is created again (finalizers can hold it).
	RecreateTimeout time.Duration
	// HTTPClient, when set, is the connection pool the Applier sends through,
	// shared with every other client of the same cluster and identity (the
	// agent passes its manager's, or one per impersonated ServiceAccount).
	// It must carry the rest config's credentials and impersonation. When
	// nil, New builds one from the rest config: fine for one Applier per
	// process (the CLI), wasteful for one per GitSync.
	HTTPClient *http.Client
	// Mapper, when set, maps kinds to resources for this Applier and is
	// shared with others of the same cluster, so discovery runs once per
	// cluster instead of once per Applier (two requests and ~220 KB each).
	// It must re-discover a group on a NoMatch, as
	// apiutil.NewDynamicRESTMapper (and so a controller-runtime manager's
	// mapper) does: that is how kinds of CRDs applied in the first stage
	// become known. When nil, New builds such a mapper.
	Mapper meta.RESTMapper
	// Client and Dynamic, when set, are the uncached clients the Applier
	// reads, dry-runs and writes through, shared by every Applier of one
	// cluster and identity (built from the same config, HTTPClient and
	// Mapper). Each client keeps a REST client per kind it used: one set
	// per GitSync cost ~20 KB each on an agent of 1,000 GitSyncs. When nil,
	// New builds them.
	Client  client.Client
	Dynamic dynamic.Interface
	// Progress, when set, is called after each object of an Apply is done
	// (applied, unchanged, skipped or failed) with how many are done and the
	// set's size. It is called from the applying goroutines, so it must be
	// quick and safe for concurrent use. The CLI draws its progress bar with it.
	Progress func(done, total int)
}

// DefaultTakeOverManagers are kubectl's field managers: fields they own are
// changes made by hand, which gitsync reverts.
func DefaultTakeOverManagers() []string {
	return []string{
		"kubectl", "kubectl-edit", "kubectl-patch", "kubectl-scale", "kubectl-label",
		"kubectl-annotate", "kubectl-client-side-apply", "before-first-apply",
	}
}

// DefaultOptions returns the options gitsync runs with.
func DefaultOptions() Options {
	return Options{
		FieldManager:     v1.FieldManager,
		Concurrency:      DefaultConcurrency,
		TakeOverManagers: DefaultTakeOverManagers(),
		CRDTimeout:       time.Minute,
		RecreateTimeout:  time.Minute,
	}
}
