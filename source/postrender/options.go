package postrender

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"
)

// Options are the changes one source asks for after its render. They are
// plain data, so they cross into a render child inside render.Settings and
// are hashed into the render cache's key.
type Options struct {
	// Patches are applied in order (spec.patches).
	Patches []Patch `json:"patches,omitempty"`
	// Labels and Annotations are set on every object's own metadata, never
	// on selectors or pod templates (spec.commonMetadata); they win over
	// the rendered object's values for the same key.
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// Images override container images (spec.images).
	Images []Image `json:"images,omitempty"`
}

// Patch is one strategic-merge or JSON 6902 patch with an optional target.
type Patch struct {
	// Patch is the patch text: a YAML or JSON object (strategic merge) or a
	// list of operations (JSON 6902).
	Patch string `json:"patch"`
	// Target selects the objects to patch; nil patches the object the
	// strategic-merge patch names by apiVersion, kind, name and namespace
	// (a JSON 6902 patch needs a target).
	Target *Selector `json:"target,omitempty"`
	// Optional lets the target match nothing; otherwise that is an error.
	Optional bool `json:"optional,omitempty"`
}

// Selector selects objects as kustomize's patch targets do: group,
// version, kind, name and namespace are anchored regular expressions,
// LabelSelector and AnnotationSelector Kubernetes label selectors; empty
// fields match everything.
type Selector struct {
	Group              string `json:"group,omitempty"`
	Version            string `json:"version,omitempty"`
	Kind               string `json:"kind,omitempty"`
	Name               string `json:"name,omitempty"`
	Namespace          string `json:"namespace,omitempty"`
	LabelSelector      string `json:"labelSelector,omitempty"`
	AnnotationSelector string `json:"annotationSelector,omitempty"`
}

// Image is one image override, as kustomize's images field: containers
// and initContainers whose image name is Name get NewName, NewTag or
// Digest (a Digest wins over NewTag).
type Image struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// IsZero reports whether o changes nothing.
func (o Options) IsZero() bool {
	return len(o.Patches) == 0 && len(o.Labels) == 0 && len(o.Annotations) == 0 && len(o.Images) == 0
}

// Digest names o for cache keys: equal options, equal digest ("" for none).
func (o Options) Digest() string {
	if o.IsZero() {
		return ""
	}
	b, err := json.Marshal(o) // map keys sorted
	if err != nil {
		panic(fmt.Sprintf("postrender options do not encode: %v", err)) // plain strings and maps
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// String describes s for messages, e.g. "kind=Deployment,name=web".
func (s Selector) String() string {
	var parts []string
	for _, f := range [][2]string{{"group", s.Group}, {"version", s.Version}, {"kind", s.Kind}, {"name", s.Name},
		{"namespace", s.Namespace}, {"labelSelector", s.LabelSelector}, {"annotationSelector", s.AnnotationSelector}} {
		if f[1] != "" {
			parts = append(parts, f[0]+"="+f[1])
		}
	}
	if len(parts) == 0 {
		return "every object"
	}
	return strings.Join(parts, ",")
}

func (s Selector) kustomize() types.Selector {
	return types.Selector{
		ResId: resid.ResId{
			Gvk:       resid.Gvk{Group: s.Group, Version: s.Version, Kind: s.Kind},
			Name:      s.Name,
			Namespace: s.Namespace,
		},
		LabelSelector:      s.LabelSelector,
		AnnotationSelector: s.AnnotationSelector,
	}
}

func (i Image) kustomize() types.Image {
	return types.Image{Name: i.Name, NewName: i.NewName, NewTag: i.NewTag, Digest: i.Digest}
}
