package prepare

import (
	"strings"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/oci"
)

// Artifact is the OCI artifact an oci:// spec.source names and the path
// rendered of it. A chart source of a registry (spec.source.chart) is the
// artifact URL/NAME, its version the tag (Helm writes a version's "+" as
// "_"), rendered at NAME, the chart's directory in its layer; so OCI charts
// are resolved, pulled and cosign-verified as any artifact is. The agent and
// the CLI's --gitsync previews read it here alike.
func Artifact(gs *v1.GitSync) (oci.Artifact, string) {
	spec := gs.Spec.Source
	a := oci.Artifact{URL: strings.TrimSuffix(spec.URL, "/"), Ref: oci.Ref{Tag: spec.Ref.Tag, Semver: spec.Ref.Semver, Digest: spec.Ref.Digest}}
	if spec.Chart == "" {
		return a, spec.Path
	}
	a.URL += "/" + spec.Chart
	a.Ref.Tag = strings.ReplaceAll(a.Ref.Tag, "+", "_")
	return a, spec.Chart
}

// HelmChart is the chart gs's spec.helm.chart names, as the chart fetcher
// resolves it (the highest version in its range); ok is false without one.
// The agent and the CLI's --gitsync previews read it here alike.
func HelmChart(gs *v1.GitSync) (need helm.Need, ok bool) {
	if gs.Spec.Helm == nil || gs.Spec.Helm.Chart == nil {
		return helm.Need{}, false
	}
	ref := gs.Spec.Helm.Chart
	return helm.Need{Name: ref.Name, Repository: strings.TrimSuffix(ref.Repository, "/"), Version: ref.Version}, true
}
