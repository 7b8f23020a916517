package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/chartrepo"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/oci"
	"gitsync.dev/gitsync/tenant"
)

// A GitSync with spec.source.chart renders one chart of a Helm repository
// or OCI registry with spec.helm's values. Its revision is the chart's
// version and the archive's digest (git.Revision.Digest), so from the
// resolve on it is synced as an artifact is (ocisource.go): the archive is
// unpacked and rendered once per digest and settings. The chart is read by
// the agent's one chart fetcher (chartrepo, which chart dependencies use
// too): every connection through the egress guard, archives capped and
// stored by digest, the index or tag list read once per interval (and at
// once on a requested reconcile) with the GitSync's own credentials.

// chartLimits bound a chart archive's expansion (its download is capped
// by the fetcher's MaxChartBytes).
var chartLimits = oci.Limits{Files: 10_000, FileBytes: 64 << 20}

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
	var acc chartrepo.Access
	if ref := spec.SecretRef; ref != nil {
		origin := fmt.Sprintf("Secret/%s/%s (spec.source.secretRef)", gs.Namespace, ref.Name)
		secret, err := view.Secret(ctx, tenant.Ref{Name: ref.Name, Field: "spec.source.secretRef"})
		if err != nil {
			return src, git.Revision{}, classifyRead(fmt.Errorf("%s read failed: %w", origin, err), v1.ReasonFetchFailed)
		}
		creds, err := chartrepo.FromSecret(repo, origin, secret.Data)
		if err != nil {
			return src, git.Revision{}, stalled(v1.ReasonInvalidSpec, err)
		}
		acc.Repositories = []chartrepo.Repository{creds}
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

// extractChart unpacks the stored archive a into dst (which does not exist
// yet), checking it against its digest: the chart's directory lands at
// dst/NAME, where spec.source.chart renders it.
func extractChart(a helm.Archive, dst string) error {
	f, err := os.Open(a.File)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	h := sha256.New()
	if err := oci.Extract(io.TeeReader(f, h), dst, chartLimits); err != nil {
		return fmt.Errorf("chart %s %s: %w", a.Name, a.Version, err)
	}
	if _, err := io.Copy(h, f); err != nil { // what gzip's end left unread
		return err
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != a.Digest {
		return fmt.Errorf("chart %s %s: the stored archive hashes to %s, not %s", a.Name, a.Version, got, a.Digest)
	}
	if _, err := os.Stat(filepath.Join(dst, a.Name, "Chart.yaml")); err != nil {
		return fmt.Errorf("chart %s %s: the archive has no %s/Chart.yaml: %w", a.Name, a.Version, a.Name, oci.ErrLayout)
	}
	return nil
}
