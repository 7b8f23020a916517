package render

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// Rendered is the output of rendering one path of a checkout: validated
// objects in a deterministic order, and a digest of the inputs that produced
// them (so an unchanged path at a new commit can reuse the previous render).
type Rendered struct {
	// Objects are the desired objects, validated and sorted, never nil on success.
	Objects []*unstructured.Unstructured
	// Digest identifies the rendered content, e.g. "sha256:<hex>".
	Digest string
	// SOPS are the SOPS-encrypted files read, by the mac of their metadata,
	// still encrypted: decryption is per GitSync (source/sops.Objects).
	SOPS map[string]SOPSFile
	// Origins, with Options.Origins, say where each object of Objects (by
	// index) is defined: "deploy/a.yaml:12: document 2", a chart's template
	// file, or a kustomization's directory "(kustomize output)".
	Origins []string
}
