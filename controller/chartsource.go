package controller

import (
	"context"
	"errors"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/prepare"
	"gitsync.dev/gitsync/source/chartrepo"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/tenant"
)

// A GitSync with spec.source.chart renders one chart of a Helm repository
// with spec.helm's values (a chart of an OCI registry is read as the
// artifact URL/NAME, prepare.Artifact, so it is cosign-verified as any
// artifact). Its revision is the chart's
// version and the archive's digest (git.Revision.Digest), so from the
// resolve on it is synced as an artifact is (ocisource.go): the archive is
// unpacked and rendered once per digest and settings. The chart is read by
// the agent's one chart fetcher (chartrepo, which chart dependencies use
// too): every connection through the egress guard, archives capped and
// stored by digest, the index or tag list read once per interval (and at
// once on a requested reconcile) with the GitSync's own credentials.

// chartRevision resolves gs's chart: the version its ref selects and that
// version's archive, downloaded unless stored.
func (r *GitSyncReconciler) chartRevision(ctx context.Context, gs *v1.GitSync, st *syncState, view *tenant.View, now, notBefore time.Time) (git.Source, git.Revision, error) {
	spec := gs.Spec.Source
	repo := strings.TrimSuffix(spec.URL, "/")
	src := git.Source{URL: spec.URL, Path: spec.Chart}
	if r.opts.Charts == nil {
		return src, git.Revision{}, stalled(v1.ReasonInvalidSpec, errors.New("this agent reads no chart repositories"))
	}
	need := helm.Need{Name: spec.Chart, Repository: repo, Version: spec.Ref.Tag, Locked: spec.Ref.Tag != ""}
	if spec.Ref.Semver != "" {
		need.Version = spec.Ref.Semver
	}
	acc, err := sourceChartAccess(ctx, gs, view)
	if err != nil {
		return src, git.Revision{}, err
	}
	start := r.clock.Now()
	archives, err := r.opts.Charts.Resolve(chartrepo.FreshAfter(ctx, notBefore), []helm.Need{need}, acc)
	reason := ""
	if err != nil {
		err = classifyFetch(err)
		reason = asSyncError(err, v1.ReasonFetchFailed).Reason
	}
	r.opts.Metrics.ObserveFetch(client.ObjectKeyFromObject(gs), r.clock.Since(start), reason)
	if err != nil {
		return src, git.Revision{}, err
	}
	a := archives[0]
	rev := git.Revision{URL: repo + "/" + spec.Chart, Ref: a.Version, Digest: a.Digest}
	st.resolved(gs, src, rev, now)
	st.setArtifact(&artifactSource{chart: &a})
	return src, rev, nil
}

// sourceChartAccess reads a chart source's credentials and trusted keys
// through the tenant view (prepare.SourceChartAccess).
func sourceChartAccess(ctx context.Context, gs *v1.GitSync, view *tenant.View) (chartrepo.Access, error) {
	acc, err := prepare.SourceChartAccess(ctx, gs, secretData(view))
	if err != nil {
		return acc, classifyPrepare(err, v1.ReasonVerificationFailed)
	}
	return acc, nil
}

// chartSourceVerified checks the chart of an http(s):// chart source
// against spec.source.verify's keys (mode Provenance), read in this sync:
// a key removed from the Secret stops the chart at the next sync, and a
// remembered verdict costs no request while nothing changed.
func (r *GitSyncReconciler) chartSourceVerified(ctx context.Context, gs *v1.GitSync, st *syncState, view *tenant.View) (string, error) {
	a := st.artifact()
	if a == nil || a.chart == nil {
		return "", retry(v1.ReasonFetchFailed, errors.New("chart not resolved yet"))
	}
	acc, err := sourceChartAccess(ctx, gs, view)
	if err != nil {
		return "", err
	}
	signer, err := r.opts.Charts.Verify(ctx, strings.TrimSuffix(gs.Spec.Source.URL, "/"), *a.chart, acc)
	if err != nil {
		return "", classifyFetch(err)
	}
	if signer == "" { // never expected: the Trust is of this very URL
		return "", stalled(v1.ReasonVerificationFailed, errors.New("the chart was not verified"))
	}
	return signer, nil
}
