package render

import (
	"gitsync.dev/gitsync/source/chartrepo"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/ignore"
	"gitsync.dev/gitsync/source/postrender"
)

// Settings are one source's own choices about how its path renders
// (spec.helm, spec.ignore, and the changes made after any render:
// spec.patches, spec.images, spec.commonMetadata), beside the agent's caps in Options. Two sources
// with the same path render alike only with equal settings, so caches key
// renders by Key as well.
type Settings struct {
	// Helm says how to render a chart directory (a path holding Chart.yaml);
	// nil renders it with the chart's own values, release name = chart name.
	Helm *helm.Options
	// Charts are the credentials the chart's dependencies are downloaded
	// with (spec.helm.repositories; the user's Helm configuration on a
	// laptop). They are the agent's business: never sent to a render child
	// and not in any key but the downloader's own.
	Charts chartrepo.Access `json:"-"`
	// Ignore adds rules to the defaults and the repository's .gitsyncignore
	// files (see package ignore).
	Ignore ignore.Options
	// PostRender are changes made to the rendered objects whatever rendered
	// them (see package postrender); zero changes nothing.
	PostRender postrender.Options
}

// PostRenderKey names the post-render changes; "" for none, so sources
// without any share renders as before.
func (s Settings) PostRenderKey() string {
	if d := s.PostRender.Digest(); d != "" {
		return "post:" + d
	}
	return ""
}

// IgnoreKey names the ignore rules; "" for none beyond the defaults.
func (s Settings) IgnoreKey() string {
	if s.Ignore == (ignore.Options{}) {
		return ""
	}
	return "ignore:" + ignore.Digest(s.Ignore)
}

// DownloadedChart reports whether a chart downloaded from a repository
// (helm.Options.Chart) renders the path, whatever the path holds.
func (s Settings) DownloadedChart() bool { return s.Helm != nil && s.Helm.Chart != nil }

// HelmKey names the Helm settings; it matters only for a chart path.
func (s Settings) HelmKey() string {
	if s.Helm == nil {
		return "helm:-"
	}
	return "helm:" + s.Helm.Digest()
}
