package git

import "strings"

// Revision is what a Source resolved to at one moment. It is a value: two
// equal Revisions name the same content.
type Revision struct {
	// URL is the repository URL with credentials removed.
	URL string
	// Ref is the short name that was followed: a branch, a tag (also the tag a
	// semver range picked), or empty for a pinned commit.
	Ref string
	// Commit is the full hex SHA-1 of the resolved commit; empty for an OCI
	// artifact.
	Commit string
	// Digest is an OCI artifact's manifest digest ("sha256:<hex>") when the
	// source is an oci:// URL (package oci resolves it); empty for Git.
	// The pipeline after resolve handles both kinds through this one value,
	// and ID names either.
	Digest string
	// Chart names the chart a Git path's values render with when it comes
	// from a chart repository (spec.helm.chart): "NAME@VERSION@sha256:<hex>";
	// empty otherwise. The content is the commit's and the chart's, so a
	// new chart version is a new revision.
	Chart string
	// Previous is the commit this Fetcher last fetched for the same branch or
	// tag, when it differs from Commit; empty otherwise.
	Previous string
	// Rewritten is true when Previous is not an ancestor of Commit within
	// Options.HistoryDepth commits: the branch or tag was force-pushed,
	// rebased or re-tagged. Only Fetch and Checkout set it.
	Rewritten bool
}

// ID names the content: the commit, or the artifact's digest, with the
// chart rendering it when there is one.
func (r Revision) ID() string {
	id := r.Commit
	if r.Digest != "" {
		id = r.Digest
	}
	if r.Chart != "" {
		id += chartMark + r.Chart
	}
	return id
}

// chartMark joins a revision and the chart it renders with, in String.
const chartMark = "+chart:"

// IsArtifact reports whether r is an OCI artifact's revision.
func (r Revision) IsArtifact() bool { return r.Digest != "" }

// String renders "main@sha1:<commit>" (or "sha1:<commit>" for a pinned
// commit), the form used in status and events; an artifact's is
// "v1.2.0@sha256:<hex>" (or the digest alone), as Flux writes it. A chart
// follows as "+chart:NAME@VERSION@sha256:<hex>".
func (r Revision) String() string {
	if r.Chart != "" {
		base := r
		base.Chart = ""
		return base.String() + chartMark + r.Chart
	}
	var b strings.Builder
	if r.Ref != "" {
		b.WriteString(r.Ref)
		b.WriteString("@")
	}
	if r.Digest != "" {
		b.WriteString(r.Digest)
		return b.String()
	}
	b.WriteString("sha1:")
	b.WriteString(r.Commit)
	return b.String()
}

// ParseRevision reads the String form back: "REF@sha1:<commit>" or
// "sha1:<commit>", as status and events carry it, or an artifact's
// "REF@sha256:<hex>" / "sha256:<hex>", either followed by a chart's
// "+chart:...". Only Ref, Commit (or Digest) and Chart survive the round
// trip (URL, Previous and Rewritten are not in the text); ok is false for
// text of another form, "" included.
func ParseRevision(s string) (rev Revision, ok bool) {
	if base, chart, found := strings.Cut(s, chartMark); found {
		if chart == "" {
			return Revision{}, false
		}
		rev, ok := parseRevision(base)
		if !ok {
			return Revision{}, false
		}
		rev.Chart = chart
		return rev, true
	}
	return parseRevision(s)
}

func parseRevision(s string) (rev Revision, ok bool) {
	if ref, hex, found := strings.Cut(s, "sha256:"); found {
		if hex == "" || strings.Contains(hex, ":") || strings.Contains(ref, "sha1:") {
			return Revision{}, false
		}
		if ref != "" {
			var at bool
			if ref, at = strings.CutSuffix(ref, "@"); !at || ref == "" {
				return Revision{}, false
			}
		}
		return Revision{Ref: ref, Digest: "sha256:" + hex}, true
	}
	ref, commit, found := strings.Cut(s, "sha1:")
	if !found || commit == "" || strings.Contains(commit, "sha1:") {
		return Revision{}, false
	}
	if ref != "" {
		var at bool
		if ref, at = strings.CutSuffix(ref, "@"); !at || ref == "" {
			return Revision{}, false
		}
	}
	return Revision{Ref: ref, Commit: commit}, true
}

// ShortRevision abbreviates the commit of "main@sha1:<40 hex>", or the
// digest of an artifact's "v1@sha256:<64 hex>", to 12 digits, for tables
// and pages; "<none>" for an empty revision, another text as it is.
func ShortRevision(rev string) string {
	if rev == "" {
		return "<none>"
	}
	r, ok := ParseRevision(rev)
	const digestPrefix = len("sha256:")
	switch {
	case !ok:
		return rev
	case len(r.Commit) > 12:
		r.Commit = r.Commit[:12]
	case len(r.Digest) > digestPrefix+12:
		r.Digest = r.Digest[:digestPrefix+12]
	default:
		return rev
	}
	return r.String()
}
