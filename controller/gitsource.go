package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/commitstatus"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/git/githubapp"
	"gitsync.dev/gitsync/source/verify"
	"gitsync.dev/gitsync/tenant"
)

// sourceOf translates spec.source into a git.Source that reaches its
// remote only through the egress dialer, reading credentials through the
// tenant boundary when the remote is asked for a new revision. A local
// repository is refused unless the operator allowed local sources.
func (r *GitSyncReconciler) sourceOf(ctx context.Context, gs *v1.GitSync, view *tenant.View) (git.Source, error) {
	spec := gs.Spec.Source
	src := git.Source{
		URL:    spec.URL,
		Path:   spec.Path,
		Ref:    git.Ref{Branch: spec.Ref.Branch, Tag: spec.Ref.Tag, Semver: spec.Ref.Semver, Commit: spec.Ref.Commit},
		Egress: r.gitEgress,
	}
	if err := src.Validate(); err != nil {
		return src, stalled(v1.ReasonInvalidSpec, err)
	}
	if src.IsLocal() && !r.opts.AllowLocalSources {
		return src, stalled(v1.ReasonInvalidSpec, fmt.Errorf("source url %s is a path on the agent's disk; "+
			"local sources are refused unless gitsync run is started with --allow-local-sources", git.RedactURL(spec.URL)))
	}
	return src, r.sourceAuth(ctx, gs, view, &src)
}

// sourceAuth reads spec.source.secretRef into src.Auth; a GitHub App there
// becomes its installation token, told to the sync's redactor.
func (r *GitSyncReconciler) sourceAuth(ctx context.Context, gs *v1.GitSync, view *tenant.View, src *git.Source) error {
	spec := gs.Spec.Source
	if spec.SecretRef == nil {
		return nil
	}
	key := client.ObjectKey{Namespace: gs.Namespace, Name: spec.SecretRef.Name}
	secret, err := view.Secret(ctx, tenant.Ref{Name: key.Name, Field: "spec.source.secretRef"})
	if err != nil {
		return classifyRead(fmt.Errorf("Secret/%s/%s read failed: %w", key.Namespace, key.Name, err), v1.ReasonFetchFailed)
	}
	// The keys read are git.SecretKey*; the Secret's name and key names
	// let a refusal say which keys it has instead.
	src.Auth = git.AuthFromSecret(fmt.Sprintf("Secret/%s/%s", key.Namespace, key.Name), secret.Data)
	if src.Auth.GitHubApp == nil {
		return nil
	}
	tok, err := src.Auth.UseGitHubApp(ctx, r.githubApps(), src.URL)
	view.Redact(tok)
	return classifyGitHubApp(err, key)
}

// classifyGitHubApp sorts a failure to get a GitHub App token: what GitHub
// refused (a wrong key, an app not installed on the repository) waits for
// the Secret or the installation to change; no answer is retried.
func classifyGitHubApp(err error, key client.ObjectKey) error {
	var ae *githubapp.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, git.ErrInvalidSource):
		return stalled(v1.ReasonInvalidSpec, err)
	case errors.As(err, &ae) && ae.Permanent():
		return stalled(v1.ReasonAuthenticationFailed, fmt.Errorf("Secret/%s/%s: %w", key.Namespace, key.Name, err))
	}
	return retry(v1.ReasonFetchFailed, fmt.Errorf("Secret/%s/%s: %w", key.Namespace, key.Name, err))
}

// githubApps is the one cache of GitHub App tokens (source and commit
// status Secrets alike): GitSyncs naming the same app share its tokens.
// Its requests dial through the agent's egress policy and follow no
// redirect.
func (r *GitSyncReconciler) githubApps() *githubapp.Tokens {
	r.appTokensOnce.Do(func() {
		r.appTokens, _ = githubapp.New(githubapp.Options{
			Client: commitstatus.NewHTTPClient(r.opts.Egress.DialContext, 0),
			Clock:  r.clock,
		})
	})
	return r.appTokens
}

// verified checks rev against spec.source.verify with the keys of its
// Secret (read through the tenant boundary) and names who signed it; ""
// when nothing is to be verified. A refusal (unsigned, untrusted or
// tampered, or keys that do not parse) is Stalled VerificationFailed: it
// lasts until the revision or the Secret changes, and the Secret's watch
// requeues gs when it does. Verdicts are remembered, so a revision verified
// once costs a digest of the Secret's data.
func (r *GitSyncReconciler) verified(ctx context.Context, gs *v1.GitSync, st *syncState, view *tenant.View, src git.Source, rev git.Revision) (string, error) {
	spec := gs.Spec.Source.Verify
	if spec == nil {
		return "", nil
	}
	if rev.IsArtifact() {
		return r.artifactVerified(ctx, gs, st, view, rev)
	}
	p := verify.Policy{Mode: spec.Mode, Origin: fmt.Sprintf("Secret/%s/%s", gs.Namespace, spec.SecretRef.Name)}
	if err := p.Check(src.Ref); err != nil {
		return "", stalled(v1.ReasonInvalidSpec, err)
	}
	secret, err := view.Secret(ctx, tenant.Ref{Name: spec.SecretRef.Name, Field: "spec.source.verify.secretRef"})
	if err != nil {
		return "", classifyRead(fmt.Errorf("%s (spec.source.verify.secretRef) read failed: %w", p.Origin, err), v1.ReasonVerificationFailed)
	}
	p.Keys = secret.Data
	res, err := r.verifier.Verify(ctx, r.opts.Fetcher, src, rev, p)
	var ve *verify.Error
	switch {
	case errors.As(err, &ve):
		return "", stalled(v1.ReasonVerificationFailed, err)
	case err != nil:
		return "", classifyFetch(err)
	}
	return res.String(), nil
}

// resolve asks src's remote for the revision of its ref, sharing one
// ls-remote asked at notBefore or later with the GitSyncs that follow the
// same URL and ref with the same credentials (remote.Resolver), and records
// the duration and, on failure, its reason in the fetch metrics.
func (r *GitSyncReconciler) resolve(ctx context.Context, gs *v1.GitSync, src git.Source, notBefore time.Time) (git.Revision, error) {
	start := r.clock.Now()
	origin := ""
	if ref := gs.Spec.Source.SecretRef; ref != nil {
		origin = gs.Namespace + "/" + ref.Name
	}
	rev, err := r.resolver.Resolve(ctx, src, origin, notBefore)
	reason := ""
	if err != nil {
		reason = asSyncError(classifyFetch(err), v1.ReasonFetchFailed).Reason
	}
	r.opts.Metrics.ObserveFetch(client.ObjectKeyFromObject(gs), r.clock.Since(start), reason)
	return rev, err
}

// newTenantReader returns the reader of what GitSyncs name, watching the
// named objects and RBAC with the manager's connection; a change of a
// named object requeues the GitSyncs naming it with a fresh fetch.
func newTenantReader(mgr manager.Manager, opts Options, requeue func(types.NamespacedName), runCtx func() context.Context) (*tenant.Reader, error) {
	cs, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, err
	}
	gitsyncs, err := mgr.GetCache().GetInformer(context.Background(), &v1.GitSync{})
	if err != nil {
		return nil, err
	}
	return tenant.New(tenant.Options{
		Clientset: cs, APIReader: mgr.GetAPIReader(), GitSyncs: gitsyncs, Metadata: md,
		Reviewer: tenant.NewReviewer(mgr.GetConfig()), Requeue: requeue, RunContext: runCtx,
		DefaultServiceAccount: opts.DefaultServiceAccount,
	})
}
