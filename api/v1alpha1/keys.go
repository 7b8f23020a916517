package v1alpha1

// Every gitsync.dev key gitsync reads or writes on objects, and the names it
// registers, live here so that a reader finds the whole public vocabulary
// in one file. Naming rule: the constant is what the key is (Label,
// Annotation, Index) followed by the key's own name in CamelCase
// (gitsync.dev/prune-max-share is AnnotationPruneMaxShare); a value with a
// meaning of its own is the key's name followed by the value
// (OwnerKindCLI, PruneDisabled).

// Group is the API group of the GitSync resource and the prefix of every key.
const Group = "gitsync.dev"

// Owner labels, on every object a sync applied. Pruning requires them to
// still carry the sync's values.
const (
	// LabelName carries the owning GitSync's (or CLI sync's) name.
	LabelName = "gitsync.dev/name"
	// LabelNamespace carries the owning GitSync's namespace (or the CLI
	// sync's namespace).
	LabelNamespace = "gitsync.dev/namespace"
	// LabelOwnerKind set to OwnerKindCLI marks an object applied by
	// `gitsync apply --name`; without it the owner is a GitSync. It keeps a
	// CLI inventory and a GitSync of the same name and namespace apart.
	LabelOwnerKind = "gitsync.dev/owner-kind"
	// OwnerKindCLI is the LabelOwnerKind value of CLI inventories.
	OwnerKindCLI = "cli"
)

// Keys on applied objects that change what a sync does with them.
const (
	// AnnotationPrune set to PruneDisabled keeps an object when it leaves
	// Git (and keeps it out of the inventory).
	AnnotationPrune = "gitsync.dev/prune"
	// PruneDisabled is the AnnotationPrune value that disables pruning.
	PruneDisabled = "disabled"
	// AnnotationAllowProtectedPrune set to "true" on a protected object
	// (the GitSync being reconciled, the GitSync CRD, the agent's own
	// workload, ServiceAccount, RBAC and Namespace) is the explicit consent
	// to prune it.
	AnnotationAllowProtectedPrune = "gitsync.dev/allow-protected-prune"
	// AnnotationRecreate set to "enabled" lets gitsync delete and recreate
	// an object whose change touches an immutable field.
	AnnotationRecreate = "gitsync.dev/recreate"
	// AnnotationWave orders applies within one sync: objects apply in
	// ascending integer wave (default "0") after the built-in stages
	// (CRDs and Namespaces first); with spec.wait each wave waits for the
	// previous one to be healthy.
	AnnotationWave = "gitsync.dev/wave"
	// AnnotationSubstitute set to SubstituteDisabled leaves an object's
	// ${...} as is.
	AnnotationSubstitute = "gitsync.dev/substitute"
	// SubstituteDisabled is the AnnotationSubstitute value that turns
	// substitution off for one object.
	SubstituteDisabled = "disabled"
	// AnnotationApply on an object in Git changes how it is applied:
	// ApplyCreateOnly or ApplyDisabled.
	AnnotationApply = "gitsync.dev/apply"
	// ApplyCreateOnly is the AnnotationApply value that creates the object
	// when it is absent and never updates it afterwards (it is still owned,
	// recorded and pruned).
	ApplyCreateOnly = "create-only"
	// ApplyDisabled is the AnnotationApply value that leaves the object
	// alone: gitsync neither creates nor updates it, and prunes or deletes
	// it only if it carries the sync's owner labels (gitsync applied it
	// before the annotation).
	ApplyDisabled = "disabled"
)

// Keys on a GitSync.
const (
	// Finalizer guards a GitSync until its inventory was pruned or orphaned.
	Finalizer = "gitsync.dev/finalizer"
	// AnnotationRequestedAt, set to any new value on a GitSync, asks for a
	// reconcile now with a fresh look at the remote (`kubectl annotate`,
	// `gitsync reconcile`, a webhook forwarded by a replica that does not
	// own the GitSync).
	AnnotationRequestedAt = "gitsync.dev/requested-at"
	// AnnotationPruneMaxShare on a GitSync overrides the agent's prune share
	// limit for that sync: a number in [0, 1], "1" or "0" letting one large
	// intentional removal through.
	AnnotationPruneMaxShare = "gitsync.dev/prune-max-share"
)

// Keys of the CLI's ConfigMap inventories.
const (
	// LabelInventory marks a ConfigMap as the inventory of the CLI sync
	// named by its value.
	LabelInventory = "gitsync.dev/inventory"
	// AnnotationInventoryEntries on a CLI inventory ConfigMap shows the
	// number of its entries without decoding them.
	AnnotationInventoryEntries = "gitsync.dev/inventory-entries"
)

// Keys of the Leases replicas share work with (gitsync run --shards auto).
const (
	// LabelShardGroup marks the Leases of one group of replicas (those
	// dividing the same GitSyncs); its value is the group's name.
	LabelShardGroup = "gitsync.dev/shard-group"
	// AnnotationShardView on a member's Lease lists, comma-separated, the
	// members whose shares it works with.
	AnnotationShardView = "gitsync.dev/shard-view"
)

// Keys of the GitSync CustomResourceDefinition (gitsync run --install-crds).
const (
	// AnnotationCRDDigest on the GitSync CRD is the SHA-256 of the
	// definition the agent installed: an agent that finds its own digest on
	// an Established CRD starts without writing it again.
	AnnotationCRDDigest = "gitsync.dev/crd-digest"
)

// Names the agent registers in its own process.
const (
	// FieldManager is the server-side apply field manager gitsync writes as.
	FieldManager = "gitsync"
	// IndexSourceURL is the field index of GitSyncs by normalised source
	// URL, which webhooks dispatch by.
	IndexSourceURL = "gitsync.dev/normalized-url"
	// IndexDependsOn is the field index of GitSyncs by the GitSyncs their
	// spec.dependsOn names.
	IndexDependsOn = "gitsync.dev/dependsOn"
)
