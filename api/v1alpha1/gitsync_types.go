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
//
// +kubebuilder:validation:XValidation:rule="!has(self.helm) || !has(self.helm.chart) || (!has(self.source.chart) && !self.source.url.startsWith('oci://'))",message="helm.chart renders a chart from a repository with values files of a Git source; a chart or artifact source (source.chart, an oci:// url) renders its own"
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

	// HealthChecks judge the health of the kinds they name with CEL
	// expressions, in place of kstatus, wherever health is judged: with
	// Wait, the wait and the waves (and so the readiness dependents see);
	// `gitsync tree` too. Without Wait they are not used. A rule here wins
	// over the agent's rule (`gitsync run --health-rules`) for the same
	// group and kind.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	HealthChecks []HealthCheck `json:"healthChecks,omitempty"`

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

	// Patches change the rendered objects, whatever rendered them (plain
	// YAML, a kustomization, a Helm chart), as kustomize's patches field
	// does: each is a strategic-merge patch or a JSON 6902 patch, applied in
	// order to the objects its target selects. A patch that cannot apply, or
	// whose target matches no object (unless it is optional), stops the sync
	// with nothing applied.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Patches []Patch `json:"patches,omitempty"`

	// Images override container images in the rendered objects, as
	// kustomize's images field does (containers and initContainers of every
	// workload and of custom resources, image volumes), after Patches.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Images []Image `json:"images,omitempty"`

	// CommonMetadata adds labels and annotations to every rendered object's
	// own metadata, after Patches; selectors and pod templates are left
	// alone. They win over the object's values for the same keys.
	// +optional
	CommonMetadata *CommonMetadata `json:"commonMetadata,omitempty"`

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

	// Notifications tell a chat channel or a webhook when the GitSync's
	// state changes: Ready on a new revision, Failed with its reason,
	// Recovered. Transitions only, rate-limited per destination; a failure
	// to send never blocks syncing. See docs/guides/notifications.md.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	Notifications []NotificationSpec `json:"notifications,omitempty"`

	// Drift says what gitsync does about changes made to its objects out of
	// band: fields it leaves alone (ignore rules, honoured by apply and diff)
	// and whether drift is reverted (Correct, the default) or only reported
	// (Detect). See docs/guides/drift.md.
	// +optional
	Drift *DriftSpec `json:"drift,omitempty"`
}

// Patch is one post-render patch.
type Patch struct {
	// Patch is a strategic-merge patch (a YAML or JSON object, with the
	// apiVersion and kind of its target) or a JSON 6902 patch (a list of
	// operations), inline. YAML anchors and aliases are refused.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	Patch string `json:"patch"`

	// Target selects the objects to patch. Without it a strategic-merge
	// patch applies to the object it names (apiVersion, kind,
	// metadata.name and metadata.namespace); a JSON 6902 patch needs one.
	// +optional
	Target *PatchSelector `json:"target,omitempty"`

	// Optional lets the target match no object; by default that is an
	// error (a typo, or a chart that renamed the object), where kustomize
	// would skip the patch silently.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// PatchSelector selects rendered objects as kustomize's patch targets do.
// Group, Version, Kind, Name and Namespace are regular expressions matched
// against the whole value; empty fields match every object.
type PatchSelector struct {
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Group string `json:"group,omitempty"`
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Version string `json:"version,omitempty"`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Kind string `json:"kind,omitempty"`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// LabelSelector is a label selector (app=web,tier!=db) the object's
	// labels must match.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
	// AnnotationSelector is a label selector the object's annotations
	// must match.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	AnnotationSelector string `json:"annotationSelector,omitempty"`
}

// Image is one image override: an image named Name (without tag or
// digest) gets NewName, NewTag or Digest; a Digest wins over NewTag.
type Image struct {
	// Name is the image name to match, e.g. "nginx" or "ghcr.io/org/app".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Name string `json:"name"`
	// NewName replaces the image name.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	NewName string `json:"newName,omitempty"`
	// NewTag replaces the tag.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	NewTag string `json:"newTag,omitempty"`
	// Digest replaces the tag with a digest, e.g. "sha256:...".
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Digest string `json:"digest,omitempty"`
}

// CommonMetadata is labels and annotations for every rendered object.
type CommonMetadata struct {
	// Labels are added to every object's metadata.labels.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are added to every object's metadata.annotations.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
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

	// Chart, when set, renders a chart downloaded from a chart repository
	// with the values files of Source (ValuesFiles, relative to the
	// repository root) instead of a chart in Git: Source.Path need not
	// hold a Chart.yaml. The chart is resolved at every resolve (a newer
	// version in the range is rendered at once), and the revision names
	// both: REF@sha1:<commit>+chart:NAME@VERSION@sha256:<archive digest>.
	// Credentials and aliases of its repository come from Repositories.
	// +optional
	Chart *HelmChartRef `json:"chart,omitempty"`

	// Repositories give credentials for the chart repositories the chart's
	// Chart.yaml dependencies are downloaded from (those not vendored in
	// charts/), and names for those its dependencies name by alias
	// ("@NAME" or "alias:NAME", as after `helm repo add NAME URL`). A
	// repository not listed is read anonymously.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Repositories []HelmRepository `json:"repositories,omitempty"`
}

// HelmChartRef names one chart of a chart repository.
type HelmChartRef struct {
	// Repository is an http(s):// Helm repository serving index.yaml, the
	// oci:// registry path charts are pushed under, or "@NAME" /
	// "alias:NAME" of an entry of Repositories, as a Chart.yaml dependency
	// names it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^((https?|oci)://[^@/]+(/.*)?|@[A-Za-z0-9][-A-Za-z0-9_.]*|alias:[A-Za-z0-9][-A-Za-z0-9_.]*)$`
	Repository string `json:"repository"`
	// Name is the chart's name in the repository.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][-A-Za-z0-9_.]*$`
	Name string `json:"name"`
	// Version is an exact version or a semver range ("1.x", ">=1.2 <2"),
	// as a Chart.yaml dependency gives it: the highest matching version is
	// rendered.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Version string `json:"version"`
}

// HelmRepository names the credentials of one chart repository, or the
// name its dependencies give it, or both.
//
// +kubebuilder:validation:XValidation:rule="has(self.name) || has(self.secretRef) || has(self.verify)",message="a repository entry names the repository (name), its credentials (secretRef), the keys its charts are signed with (verify), or several"
// +kubebuilder:validation:XValidation:rule="!has(self.verify) || ((self.verify.mode == 'Cosign') == self.url.startsWith('oci://'))",message="charts of an oci:// registry verify with verify.mode Cosign, those of an http(s):// repository with Provenance"
type HelmRepository struct {
	// Name is what Chart.yaml dependencies call the repository instead of
	// its URL: "@NAME" or "alias:NAME".
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][-A-Za-z0-9_.]*$`
	// +optional
	Name string `json:"name,omitempty"`

	// URL is the repository as Chart.yaml names it: an http(s):// Helm
	// repository (matched exactly, a trailing slash aside) or an oci://
	// registry (matched by host, as `helm registry login`).
	// +kubebuilder:validation:Pattern=`^(https?|oci)://[^@/]+(/.*)?$`
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`
	// SecretRef names a Secret in the GitSync's namespace with keys
	// username and password, or (for an oci:// registry) a
	// kubernetes.io/dockerconfigjson Secret whose .dockerconfigjson has an
	// entry for the registry's host. Without it the repository is read
	// anonymously.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// Verify, when set, renders a chart of this repository (a Chart.yaml
	// dependency or spec.helm.chart) only when it is signed by a key of
	// the named Secret: an http(s):// repository's chart by its Helm
	// provenance file (mode Provenance: the archive's URL + ".prov", as
	// `helm package --sign` writes it, against the armored OpenPGP keys of
	// every data key ending ".asc"), an oci:// chart by a cosign signature
	// of its manifest (mode Cosign, against the PEM public keys of every
	// data key ending ".pub"). An oci:// URL covers the charts under its
	// path. A chart that is unsigned, signed by another key or whose
	// signature does not match is Stalled VerificationFailed: nothing is
	// rendered, applied or pruned.
	// +optional
	Verify *ChartVerification `json:"verify,omitempty"`
}

// ChartVerification names the keys the charts of a repository must be
// signed with.
type ChartVerification struct {
	// Mode is how a chart is signed: Provenance (a Helm provenance file,
	// http(s):// repositories) or Cosign (oci:// registries).
	// +kubebuilder:validation:Enum=Provenance;Cosign
	Mode VerificationMode `json:"mode"`
	// SecretRef names a Secret in the GitSync's namespace holding the
	// trusted public keys.
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
	// ReadyExpr is a CEL expression that decides when the dependency is
	// ready, in place of its Ready condition: it sees the dependency as
	// `dep` and this GitSync as `self` and returns a bool (for example
	// `dep.status.lastAppliedRevision.startsWith('main@')`). Allowed only
	// for a dependency in this GitSync's namespace: another tenant's
	// GitSync is not for this one to read. An error is Stalled with reason
	// HealthCheckInvalid.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	ReadyExpr string `json:"readyExpr,omitempty"`
}

// HealthCheck is a CEL health rule for one kind. Each expression sees the
// object as `self` (and its top-level fields by name, as Flux's
// healthCheckExprs do: `status`, `metadata`, `spec`) and returns a bool.
// While status.observedGeneration is set and differs from
// metadata.generation the object is InProgress and no expression runs.
// Then inProgress, failed and current are evaluated in that order and the
// first that is true decides; none true means InProgress. An expression
// reading a field the object does not have yet (no such key) means
// InProgress, and spec.timeout then reports it; any other error stalls the
// GitSync with reason HealthCheckInvalid.
type HealthCheck struct {
	// APIVersion is the group/version (or the group alone) of the kind;
	// the rule covers every version of the group and kind.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion"`
	// Kind of the objects the rule judges.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Current is true when the object is ready.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Current string `json:"current"`
	// InProgress is true while the object is still working towards ready;
	// it is evaluated first, so it wins over a current that is still true
	// from before.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	InProgress string `json:"inProgress,omitempty"`
	// Failed is true when the object will not become ready without a
	// change: spec.wait stalls at once instead of at spec.timeout.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Failed string `json:"failed,omitempty"`
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

// NotificationSpec is one destination told of the GitSync's transitions.
//
// +kubebuilder:validation:XValidation:rule="!has(self.events) || self.events.all(e, self.events.exists_one(f, f == e))",message="events lists each event once"
type NotificationSpec struct {
	// Provider is how the destination is spoken to: webhook (a JSON body
	// signed with HMAC-SHA256), slack, teams or discord (their incoming
	// webhooks), or github or gitlab (a comment on each pull or merge
	// request holding the revision's commit, listing the objects the sync
	// created, configured and pruned).
	// +kubebuilder:validation:Enum=webhook;slack;teams;discord;github;gitlab
	Provider string `json:"provider"`
	// SecretRef names a Secret in the GitSync's namespace whose "address"
	// key is the URL to post to (an incoming-webhook URL is a credential);
	// for provider webhook its "token" key is the HMAC key the body is
	// signed with. For github and gitlab, "token" is the API token and
	// "address" (optional) the API base URL, derived from
	// spec.source.url's host when absent; "ca.crt" (optional) is a CA to
	// trust.
	SecretRef LocalObjectReference `json:"secretRef"`
	// Events are the transitions sent; empty sends all of them.
	// +kubebuilder:validation:MaxItems=3
	// +listType=atomic
	// +optional
	Events []NotificationEvent `json:"events,omitempty"`
}

// NotificationEvent is a transition of a GitSync worth telling someone.
// +kubebuilder:validation:Enum=Ready;Failed;Recovered
type NotificationEvent string

const (
	// NotifyReady: the GitSync became Ready, or applied a new revision
	// that changed its objects while Ready.
	NotifyReady NotificationEvent = "Ready"
	// NotifyFailed: the GitSync failed, or failed for another reason.
	NotifyFailed NotificationEvent = "Failed"
	// NotifyRecovered: the GitSync became Ready after a failure.
	NotifyRecovered NotificationEvent = "Recovered"
)

// GitSource is one path of one repository at one ref: a Git repository,
// or an OCI artifact (an oci:// URL) holding a directory of manifests.
//
// +kubebuilder:validation:XValidation:rule="!has(self.verify) || !has(self.verify.mode) || self.verify.mode == 'HEAD' || self.verify.mode == 'Cosign' || (has(self.ref) && (has(self.ref.tag) || has(self.ref.semver)))",message="verify.mode Tag and TagAndHEAD need ref.tag or ref.semver"
// +kubebuilder:validation:XValidation:rule="!self.url.startsWith('oci://') || (has(self.ref) && (has(self.ref.tag) || has(self.ref.semver) || has(self.ref.digest)))",message="an oci:// source follows ref.tag, ref.semver or ref.digest (branches and commits are Git's)"
// +kubebuilder:validation:XValidation:rule="self.url.startsWith('oci://') || !has(self.ref) || !has(self.ref.digest)",message="ref.digest is for an oci:// source; a Git source pins ref.commit"
// +kubebuilder:validation:XValidation:rule="!has(self.verify) || (self.url.startsWith('oci://') ? (has(self.verify.mode) && self.verify.mode == 'Cosign') : (has(self.chart) ? (has(self.verify.mode) && self.verify.mode == 'Provenance') : (!has(self.verify.mode) || (self.verify.mode != 'Cosign' && self.verify.mode != 'Provenance'))))",message="an oci:// source verifies with verify.mode Cosign, a chart of an http(s):// repository with Provenance, and Git with HEAD, Tag or TagAndHEAD"
// +kubebuilder:validation:XValidation:rule="!has(self.chart) || self.url.startsWith('https://') || self.url.startsWith('http://') || self.url.startsWith('oci://')",message="a chart source's url is a Helm repository (https://) or an OCI registry path (oci://)"
// +kubebuilder:validation:XValidation:rule="!has(self.chart) || (has(self.ref) && (has(self.ref.tag) || has(self.ref.semver)))",message="a chart source follows ref.tag (a version) or ref.semver (a range of versions)"
// +kubebuilder:validation:XValidation:rule="!has(self.chart) || !has(self.path) || size(self.path) == 0",message="a chart source renders the chart itself: path is for Git and artifact sources"
type GitSource struct {
	// URL of the repository: https://, http://, ssh://, git@host:org/repo or
	// file://; or oci://REGISTRY/REPOSITORY for an OCI artifact (the layout
	// `gitsync push artifact` and `flux push artifact` write, or any
	// artifact of one gzip'd tar layer), whose manifest digest is then the
	// revision.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`

	// Chart, when set, makes URL a Helm chart repository (an https://
	// repository serving index.yaml, or the oci:// registry path charts are
	// pushed under, as a Chart.yaml dependency names it) and names the
	// chart to render: ref.tag pins its version, ref.semver follows the
	// highest version in the range, polled every interval. Values come from
	// spec.helm; the revision is VERSION@sha256:<archive digest>.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][-A-Za-z0-9_.]*$`
	// +optional
	Chart string `json:"chart,omitempty"`

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
	// known_hosts (ssh); ca.crt (a CA bundle for https). For an oci://
	// source: username and password, or a .dockerconfigjson entry of the
	// registry's host.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// Verify, when set, applies a revision only when its commit (mode
	// HEAD), its annotated tag (Tag) or both (TagAndHEAD) carry a valid
	// OpenPGP or SSH signature by a key of the named Secret, or (mode
	// Cosign, for an oci:// source) when the artifact's digest carries a
	// cosign signature by one of its public keys. A revision that is
	// unsigned, signed by another key or whose signature does not verify
	// is Stalled VerificationFailed: nothing of it is applied or pruned. A
	// chart source of an http(s):// repository verifies with mode
	// Provenance: its Helm provenance file must be signed by an OpenPGP
	// key of the Secret and name the archive's digest.
	// +optional
	Verify *GitVerification `json:"verify,omitempty"`
}

// GitVerification names the keys a revision must be signed with.
type GitVerification struct {
	// Mode says what must be signed: HEAD the commit, Tag the annotated tag
	// that ref.tag or ref.semver resolved to, TagAndHEAD both; Cosign the
	// digest of an oci:// source's artifact (or chart); Provenance the
	// chart of an http(s):// chart source, by its Helm provenance file
	// (the archive's URL + ".prov", `helm package --sign`).
	// +kubebuilder:validation:Enum=HEAD;Tag;TagAndHEAD;Cosign;Provenance
	// +kubebuilder:default=HEAD
	// +optional
	Mode VerificationMode `json:"mode,omitempty"`

	// SecretRef names a Secret in the GitSync's namespace holding the
	// trusted keys: every data key ending ".asc" is one or more armored
	// OpenPGP public keys; a key named "allowed_signers" is an OpenSSH
	// allowed signers file (principals, options, key), and every key ending
	// ".pub" is one or more SSH public keys in authorized_keys format (the
	// key's comment names its signer). For mode Cosign, every key ending
	// ".pub" is one or more PEM public keys (cosign.pub, as `cosign
	// generate-key-pair` writes it); for mode Provenance, every key ending
	// ".asc" is one or more armored OpenPGP public keys.
	SecretRef LocalObjectReference `json:"secretRef"`
}

// VerificationMode says which Git objects must be signed.
type VerificationMode string

const (
	// VerifyHEAD verifies the commit being applied.
	VerifyHEAD VerificationMode = "HEAD"
	// VerifyTag verifies the annotated tag being followed.
	VerifyTag VerificationMode = "Tag"
	// VerifyTagAndHEAD verifies both the tag and its commit.
	VerifyTagAndHEAD VerificationMode = "TagAndHEAD"
	// VerifyCosign verifies an OCI artifact's cosign signature.
	VerifyCosign VerificationMode = "Cosign"
	// VerifyProvenance verifies a Helm chart's provenance file.
	VerifyProvenance VerificationMode = "Provenance"
)

// GitRef selects exactly one of a branch, a tag, a semver range of tags, a
// commit, or (for an oci:// source) a digest.
//
// +kubebuilder:validation:XValidation:rule="[has(self.branch), has(self.tag), has(self.semver), has(self.commit), has(self.digest)].filter(x, x).size() == 1",message="exactly one of branch, tag, semver, commit or digest must be set"
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
	// Digest pins an oci:// source's manifest, "sha256:<64 hex>".
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	// +optional
	Digest string `json:"digest,omitempty"`
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

	// LastAppliedSigner names who signed LastAppliedRevision when
	// spec.source.verify (or, for spec.helm.chart, the verify of its
	// repository's entry) is set: for each object verified, the key's kind
	// and fingerprint and its identity (an OpenPGP user ID, an SSH
	// principal), e.g. `commit: OpenPGP 1A2B… "Alice <alice@example.com>"`.
	// +optional
	LastAppliedSigner string `json:"lastAppliedSigner,omitempty"`

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

	// History lists the outcomes of the last revisions synced, newest
	// first: an entry is added when a sync ends on a revision or outcome
	// other than the newest entry's (never while a revision stays as it
	// is), and at most MaxHistory are kept.
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	// +optional
	History []HistoryEntry `json:"history,omitempty"`
}

// MaxHistory is how many entries status.history keeps.
const MaxHistory = 10

// HistoryEntry is the outcome of syncing one revision.
type HistoryEntry struct {
	// Revision is the revision synced, in lastAppliedRevision's form.
	Revision string `json:"revision"`
	// Digest is "sha256:<hex>" of the objects the revision rendered to,
	// as applied (Secret data and every value from a Secret left out, so
	// it reveals none of them); empty when it did not render.
	// +optional
	Digest string `json:"digest,omitempty"`
	// Time is when the sync reached this outcome.
	Time metav1.Time `json:"time"`
	// Duration is how long that sync ran.
	Duration metav1.Duration `json:"duration"`
	// Outcome is Succeeded, or the reason the sync failed (Ready's reason).
	Outcome string `json:"outcome"`
}

// HistorySucceeded is the outcome of a revision applied in full.
const HistorySucceeded = "Succeeded"

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
