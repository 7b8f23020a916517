package controller

import (
	"context"
	"errors"
	"time"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/prepare"
	"gitsync.dev/gitsync/source/chartrepo"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/tenant"
)

// A GitSync with spec.helm.chart renders a chart of a chart repository
// with the values files of its Git source. Each resolve of the Git ref
// also resolves the chart (the index, or the tag list of an OCI registry,
// read once per interval by the agent's one chart fetcher, with the
// credentials and aliases of spec.helm.repositories), and the revision
// names both (git.Revision.Chart): a new chart version in the range is a
// new revision, applied and reported as one, without a commit. The archive
// reaches the render as helm.Options.Chart, so the render is keyed by the
// commit's whole tree and the chart's digest (source.Cache).

// withHelmChart adds gs's spec.helm.chart to rev, a revision of its Git
// source just resolved, and keeps the archive in st for the render.
func (r *GitSyncReconciler) withHelmChart(ctx context.Context, gs *v1.GitSync, st *syncState, view *tenant.View, rev git.Revision, notBefore time.Time) (git.Revision, error) {
	need, ok := prepare.HelmChart(gs)
	if !ok {
		return rev, nil
	}
	if r.opts.Charts == nil {
		return rev, stalled(v1.ReasonInvalidSpec, errors.New("spec.helm.chart: this agent reads no chart repositories"))
	}
	acc, err := chartAccess(ctx, gs, view)
	if err != nil {
		return rev, err
	}
	archives, err := r.opts.Charts.Resolve(chartrepo.FreshAfter(ctx, notBefore), []helm.Need{need}, acc)
	if err != nil {
		return rev, classifyFetch(err)
	}
	rev.Chart = archives[0].Key()
	st.setArtifact(&artifactSource{chart: &archives[0]})
	return rev, nil
}

// helmChartOf returns the archive st keeps for rev's chart, for the
// render's settings; an error when it is not the one rev names (never
// expected: both are set by one resolve).
func helmChartOf(st *syncState, rev git.Revision) (*helm.Archive, error) {
	a := st.artifact()
	if a == nil || a.chart == nil || a.chart.Key() != rev.Chart {
		return nil, retry(v1.ReasonFetchFailed, errors.New("chart "+rev.Chart+" not resolved yet"))
	}
	return a.chart, nil
}

// helmChartVerified checks rev's spec.helm.chart against the keys its
// repository entry trusts (spec.helm.repositories[].verify), read in this
// sync, so a key removed from the Secret stops the chart at once and not
// at the next resolve; a verdict is remembered, so this costs no request
// while nothing changed. It returns signer with the chart's signer added.
func (r *GitSyncReconciler) helmChartVerified(ctx context.Context, gs *v1.GitSync, st *syncState, rev git.Revision, charts chartrepo.Access, signer string) (string, error) {
	need, ok := prepare.HelmChart(gs)
	if !ok || rev.Chart == "" || len(charts.Trust) == 0 {
		return signer, nil
	}
	a, err := helmChartOf(st, rev)
	if err != nil {
		return signer, err
	}
	s, err := r.opts.Charts.Verify(ctx, need.Repository, *a, charts)
	if err != nil {
		return signer, classifyFetch(err)
	}
	switch {
	case s == "":
		return signer, nil
	case signer == "":
		return s, nil
	}
	return signer + "; " + s, nil
}
