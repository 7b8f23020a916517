package oci

import "github.com/google/go-containerregistry/pkg/v1/types"

// Media types of the artifacts read and written. Flux's are what `flux
// push artifact` writes and what gitsync push writes; the image layer
// types let a plain single-layer image of manifests be read too.
const (
	FluxConfigMediaType  types.MediaType = "application/vnd.cncf.flux.config.v1+json"
	FluxContentMediaType types.MediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
)

// contentTypes are the layer media types whose bytes are a gzip'd tar.
var contentTypes = map[types.MediaType]bool{
	FluxContentMediaType:     true,
	types.OCILayer:           true,
	types.DockerLayer:        true,
	"application/tar+gzip":   true,
	"application/gzip":       true,
	"application/x-gzip":     true,
	"application/x-tar+gzip": true,
	"application/vnd.oci.image.layer.v1.tar+gzip+encrypted": false,
	// A Helm chart pushed with `helm push`: its files are the chart's
	// directory, so an oci:// source of a chart renders it at path NAME.
	HelmChartContentMediaType: true,
}

// HelmChartContentMediaType is the layer of a Helm chart in a registry;
// a chart's manifest may carry its provenance file as a second layer.
const HelmChartContentMediaType types.MediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"

// Annotations of the manifest that say where an artifact came from.
const (
	AnnotationSource   = "org.opencontainers.image.source"
	AnnotationRevision = "org.opencontainers.image.revision"
	AnnotationCreated  = "org.opencontainers.image.created"
)
