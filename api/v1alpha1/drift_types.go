package v1alpha1

// DriftSpec says what gitsync does about changes made to its objects out of
// band.
type DriftSpec struct {
	// Mode is Correct (the default): an out-of-band change is reverted at
	// once; or Detect: it is reported (the Drifted condition, a Warning
	// Event and the gitsync_drifted_objects metric name the objects and
	// fields) and left as it is. A new revision (or a change of the
	// GitSync's spec) is applied whole in either mode, which also reverts
	// drift in the objects it applies.
	// +kubebuilder:validation:Enum=Correct;Detect
	// +optional
	Mode DriftMode `json:"mode,omitempty"`

	// Ignore lists fields gitsync leaves alone: a field under one of a
	// matching rule's paths is never reported as drift and never reverted.
	// Gitsync still sets it when it creates the object; afterwards it keeps
	// the live value (or, once another field manager took the field, no
	// longer claims it).
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Ignore []DriftIgnoreRule `json:"ignore,omitempty"`
}

// DriftMode says whether drift is reverted or only reported.
// +kubebuilder:validation:Enum=Correct;Detect
type DriftMode string

const (
	// DriftModeCorrect reverts out-of-band changes (the default).
	DriftModeCorrect DriftMode = "Correct"
	// DriftModeDetect reports out-of-band changes and leaves them.
	DriftModeDetect DriftMode = "Detect"
)

// DriftIgnoreRule names fields of some objects that gitsync leaves alone.
type DriftIgnoreRule struct {
	// Paths are JSON pointers (RFC 6901) of the fields, e.g. "/spec/replicas"
	// or "/metadata/annotations/example.com~1injected". A list element is
	// named by its index; "*" in place of an index (an extension of RFC
	// 6901) names every element, e.g. "/webhooks/*/clientConfig/caBundle".
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Paths []string `json:"paths"`

	// Target selects the objects the rule applies to; empty selects every
	// object of the GitSync.
	// +optional
	Target *DriftTarget `json:"target,omitempty"`
}

// DriftTarget selects objects by kind, name, namespace and labels; an empty
// field matches anything.
type DriftTarget struct {
	// Group is the API group ("" matches any group; use Kind to select
	// core kinds).
	// +optional
	Group string `json:"group,omitempty"`
	// Version is the API version within the group.
	// +optional
	Version string `json:"version,omitempty"`
	// Kind is the object's kind, e.g. Deployment.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name is the object's name.
	// +optional
	Name string `json:"name,omitempty"`
	// Namespace is the object's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// LabelSelector is a label selector in kubectl's syntax
	// ("app=web,tier!=db"), matched against the labels in Git.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
}
