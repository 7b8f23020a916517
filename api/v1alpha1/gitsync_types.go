package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// GitSync makes a set of objects in a cluster follow a directory of manifests
// in a Git repository.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gs,categories=gitsync
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.lastAppliedRevision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type GitSync struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GitSyncSpec   `json:"spec"`
	Status GitSyncStatus `json:"status,omitempty"`
}

// GitSyncList is a list of GitSyncs.
//
// +kubebuilder:object:root=true
type GitSyncList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitSync `json:"items"`
}

// GitSyncSpec says what to sync, how often, and how carefully.
type GitSyncSpec struct {
	// Source is the repository, ref and path to read manifests from.
	Source GitSource `json:"source"`

	// Interval between two reconciles of an unchanged GitSync: how often the
	// remote is asked for a new revision and drift missed by watches is
	// repaired. Between 1s and 24h.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="interval must be between 1s and 24h"
	// +optional
	Interval metav1.Duration `json:"interval,omitzero"`

	// RetryInterval caps the exponential backoff after a transient failure.
	// Defaults to Interval. Between 1s and 24h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="retryInterval must be between 1s and 24h"
	// +optional
	RetryInterval *metav1.Duration `json:"retryInterval,omitempty"`

	// Timeout bounds one reconcile: fetch, apply, prune and, with Wait, the
	// health wait. Defaults to 5m. Between 1s and 24h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="timeout must be between 1s and 24h"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Prune deletes objects that were applied before and are no longer in Git.
	// +kubebuilder:default=true
	// +optional
	Prune bool `json:"prune"`

	// AllowEmpty lets a render that yields no objects prune everything applied
	// before. Without it an empty render is an error: it is far more often a
	// wrong path than an intent.
	// +optional
	AllowEmpty bool `json:"allowEmpty,omitempty"`

	// Suspend stops reconciling; the objects stay as they are.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Force takes fields owned by other field managers (not only kubectl) and
	// recreates objects whose immutable fields changed.
	// +optional
	Force bool `json:"force,omitempty"`

	// Wait makes Ready also mean that every applied object is healthy
	// (kstatus Current), waiting up to Timeout.
	// +optional
	Wait bool `json:"wait,omitempty"`

	// MaxObjects lowers the agent's cap on the objects one revision may
	// render to (`gitsync run --max-objects`, default 10,000); a value above
	// the agent's cap is refused. A render over the cap fails without
	// applying anything.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxObjects *int32 `json:"maxObjects,omitempty"`

	// TargetNamespace is the namespace for namespaced objects that have none in
	// Git. Defaults to the GitSync's namespace.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// ServiceAccountName, in the GitSync's namespace, is impersonated for
	// every read and write of applied objects, so a GitSync can do no more
	// than that account may.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// KubeConfig targets another cluster: the Secret key holds a kubeconfig.
	// +optional
	KubeConfig *KubeConfigReference `json:"kubeConfig,omitempty"`

	// DeletionPolicy says what happens to applied objects when the GitSync is
	// deleted: Delete prunes them, Orphan keeps them and removes the owner
	// labels.
	// +kubebuilder:default=Delete
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// Webhook names the Secret whose "token" key verifies push webhooks for
	// Source.URL, so a push is applied without waiting for Interval.
	// +optional
	Webhook *WebhookSpec `json:"webhook,omitempty"`

	// Helm renders Source.Path as a Helm chart (it holds a Chart.yaml), like
	// `helm template`: no release is installed and no release Secret is
	// written; the objects are applied, diffed, pruned and health-checked like
	// any others. Without this field a chart directory is rendered with the
	// chart's own default values.
	// +optional
	Helm *HelmSpec `json:"helm,omitempty"`

	// DependsOn lists GitSyncs that must be Ready at their current generation
	// before this one applies anything. A cycle is reported as Stalled.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	DependsOn []DependencyReference `json:"dependsOn,omitempty"`

	// Ignore holds extra ignore rules in .gitignore syntax, one per line,
	// matched against paths from the repository root; they add to the
	// .gitsyncignore files in the repository and to the defaults.
	// +kubebuilder:validation:MaxLength=65536
	// +optional
	Ignore string `json:"ignore,omitempty"`

	// Substitute maps variable names to values replacing ${NAME} (and
	// ${NAME:=default}) in the rendered manifests.
	// +optional
	Substitute map[string]string `json:"substitute,omitempty"`

	// SubstituteFrom reads more variables from ConfigMaps and Secrets in the
	// GitSync's namespace; later entries win over earlier ones, and
	// Substitute wins over all of them. Values read from Secrets are masked
	// wherever a diff shows them.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	SubstituteFrom []SubstituteReference `json:"substituteFrom,omitempty"`

	// SubstituteStrict makes a ${NAME} without a value and without a default
	// an error naming the variable and the object. Defaults to true; false
	// replaces it with the empty string.
	// +kubebuilder:default=true
	// +optional
	SubstituteStrict *bool `json:"substituteStrict,omitempty"`

	// Decryption decrypts SOPS-encrypted Secrets from the repository before
	// applying them. Decrypted values are never written to disk, logs,
	// status, events or diffs.
	// +optional
	Decryption *DecryptionSpec `json:"decryption,omitempty"`

	// CommitStatus reports each attempt on the applied commit through the Git
	// host's API: pending while applying, success when Ready, failure with
	// the reason. A failure to post never blocks syncing.
	// +optional
	CommitStatus *CommitStatusSpec `json:"commitStatus,omitempty"`
}

// HelmSpec says how to render a chart directory.
type HelmSpec struct {
	// ReleaseName is the release name the templates see. Defaults to the
	// GitSync's name.
	// +kubebuilder:validation:MaxLength=53
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	ReleaseName string `json:"releaseName,omitempty"`

	// Namespace is the release namespace the templates see. Defaults to
	// TargetNamespace, else the GitSync's namespace.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// ValuesFiles are values files inside the repository, relative to its
	// root and confined to it like every path, merged in order over the
	// chart's values.yaml.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	ValuesFiles []string `json:"valuesFiles,omitempty"`

	// Values are merged last, over ValuesFiles.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// IncludeCRDs renders the chart's crds/ directory too. Defaults to true.
	// +kubebuilder:default=true
	// +optional
	IncludeCRDs *bool `json:"includeCRDs,omitempty"`

	// Repositories give credentials for the chart repositories the chart's
	// Chart.yaml dependencies are downloaded from (those not vendored in
	// charts/). A repository not listed is read anonymously.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Repositories []HelmRepository `json:"repositories,omitempty"`
}

// HelmRepository names the credentials of one chart repository.
type HelmRepository struct {
	// URL is the repository as Chart.yaml names it: an http(s):// Helm
	// repository (matched exactly, a trailing slash aside) or an oci://
	// registry (matched by host, as `helm registry login`).
	// +kubebuilder:validation:Pattern=`^(https?|oci)://[^@/]+(/.*)?$`
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`
	// SecretRef names a Secret in the GitSync's namespace with keys
	// username and password, or (for an oci:// registry) a
	// kubernetes.io/dockerconfigjson Secret whose .dockerconfigjson has an
	// entry for the registry's host.
	SecretRef LocalObjectReference `json:"secretRef"`
}

// DependencyReference names another GitSync.
type DependencyReference struct {
	// Name of the GitSync.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Namespace of the GitSync; defaults to this GitSync's namespace.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// SubstituteReference names a ConfigMap or Secret whose data are variables.
type SubstituteReference struct {
	// Kind is ConfigMap or Secret.
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	Kind string `json:"kind"`
	// Name of the object in the GitSync's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Optional lets the sync go on when the object does not exist.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// DecryptionSpec says how to decrypt encrypted manifests.
type DecryptionSpec struct {
	// Provider is the encryption format; only sops is known.
	// +kubebuilder:validation:Enum=sops
	Provider string `json:"provider"`
	// SecretRef names a Secret in the GitSync's namespace whose keys ending
	// in ".agekey" hold age identities (AGE-SECRET-KEY-1...).
	SecretRef LocalObjectReference `json:"secretRef"`
}

// CommitStatusSpec says where to report the state of each applied commit.
type CommitStatusSpec struct {
	// Provider is the Git host's API flavour.
	// +kubebuilder:validation:Enum=github;gitlab;gitea;bitbucket
	Provider string `json:"provider"`
	// SecretRef names a Secret in the GitSync's namespace whose "token" key
	// is the API token (for bitbucket, "username" and "password" with an
	// app password); an optional "ca.crt" key holds a CA bundle for a
	// self-hosted host.
	SecretRef LocalObjectReference `json:"secretRef"`
	// Address is the API's base URL, for self-hosted hosts; by default it is
	// derived from Source.URL (https://api.github.com, https://HOST/api/v4,
	// https://HOST/api/v1, https://api.bitbucket.org/2.0).
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	// +optional
	Address string `json:"address,omitempty"`
	// Context names the status on the commit; defaults to
	// "gitsync/NAMESPACE/NAME".
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Context string `json:"context,omitempty"`
}

// GitSource is one path of one repository at one ref.
type GitSource struct {
	// URL of the repository: https://, http://, ssh://, git@host:org/repo or
	// file://.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`

	// Ref selects the branch, tag, semver range or commit to follow.
	// +kubebuilder:default={branch: "main"}
	// +optional
	Ref GitRef `json:"ref,omitzero"`

	// Path is the directory in the repository to render, relative and without
	// ".." segments. Empty means the repository root.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/')",message="path must be relative"
	// +kubebuilder:validation:XValidation:rule="!(self == '..' || self.startsWith('../') || self.endsWith('/..') || self.contains('/../'))",message="path must not contain '..' segments"
	// +optional
	Path string `json:"path,omitempty"`

	// SecretRef names a Secret in the GitSync's namespace with Git
	// credentials under these keys: username and password, or bearerToken
	// (https); identity, passphrase (when the key is encrypted) and
	// known_hosts (ssh); ca.crt (a CA bundle for https).
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
}

// GitRef selects exactly one of a branch, a tag, a semver range of tags, or a
// commit.
//
// +kubebuilder:validation:XValidation:rule="[has(self.branch), has(self.tag), has(self.semver), has(self.commit)].filter(x, x).size() == 1",message="exactly one of branch, tag, semver or commit must be set"
type GitRef struct {
	// Branch follows the tip of a branch.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Branch string `json:"branch,omitempty"`
	// Tag pins a tag.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Tag string `json:"tag,omitempty"`
	// Semver follows the highest tag within a semver range, e.g. "~1.4".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Semver string `json:"semver,omitempty"`
	// Commit pins a full 40-hex commit SHA.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{40}$`
	// +optional
	Commit string `json:"commit,omitempty"`
}

// LocalObjectReference names an object in the GitSync's namespace.
type LocalObjectReference struct {
	// Name of the referent.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// SecretKeyReference names one key of a Secret in the GitSync's namespace.
type SecretKeyReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key in the Secret; defaults to "value".
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Key string `json:"key,omitempty"`
}

// KubeConfigReference points at a kubeconfig for a remote target cluster.
type KubeConfigReference struct {
	// SecretRef is the Secret key holding the kubeconfig.
	SecretRef SecretKeyReference `json:"secretRef"`
}

// WebhookSpec configures push webhooks for this GitSync.
type WebhookSpec struct {
	// SecretRef names a Secret whose "token" key is the shared webhook secret.
	SecretRef LocalObjectReference `json:"secretRef"`
}

// DeletionPolicy says what deleting a GitSync does to its objects.
// +kubebuilder:validation:Enum=Delete;Orphan
type DeletionPolicy string

const (
	// DeletionPolicyDelete prunes every inventory object with the GitSync.
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyOrphan leaves the objects and removes the owner labels.
	DeletionPolicyOrphan DeletionPolicy = "Orphan"
)

// GitSyncStatus is what the controller observed and did. It changes only when
// something changed: it holds no timestamps or counters that move every pass.
type GitSyncStatus struct {
	// ObservedGeneration is the spec generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, following kstatus conventions.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastAttemptedRevision is the revision last fetched and tried.
	// +optional
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`

	// LastAppliedRevision is the revision last applied successfully.
	// +optional
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`

	// LastAppliedTime is when LastAppliedRevision last changed. It is not
	// rewritten while the revision stays the same, so a converged GitSync
	// writes nothing.
	// +optional
	LastAppliedTime *metav1.Time `json:"lastAppliedTime,omitempty"`

	// Inventory lists the objects applied by the last successful reconcile.
	// +optional
	Inventory *Inventory `json:"inventory,omitempty"`

	// LastHandledRequestedAt is the value of the gitsync.dev/requested-at
	// annotation the last finished reconcile saw, so `gitsync reconcile
	// --wait` knows its request was handled even when nothing changed.
	// +optional
	LastHandledRequestedAt string `json:"lastHandledRequestedAt,omitempty"`
}

// Inventory lists applied objects.
type Inventory struct {
	// Entries, sorted by ID.
	// +listType=atomic
	Entries []InventoryEntry `json:"entries"`
}

// InventoryEntry is one applied object.
type InventoryEntry struct {
	// ID is "namespace_name_group_kind".
	ID string `json:"id"`
	// Version is the API version the object was applied with.
	// +optional
	Version string `json:"v,omitempty"`
	// UID of the object when it was applied; prune requires it to match.
	// +optional
	UID types.UID `json:"uid,omitempty"`
	// Pending marks an object recorded before its apply, without a UID: it
	// is pruned only while it carries exactly this GitSync's owner labels.
	// Entries written before this field existed are never pending.
	// +optional
	Pending bool `json:"pending,omitempty"`
}
