package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/git"
)

// sourceOf translates spec.source into a git.Source that reaches its
// remote only through the egress dialer, reading credentials through the
// agent's Secret watch (secretwatch.go) when the remote is asked for a new
// revision. A local repository is refused unless the operator allowed local
// sources.
func (r *GitSyncReconciler) sourceOf(ctx context.Context, gs *v1.GitSync) (git.Source, error) {
	spec := gs.Spec.Source
	src := git.Source{
		URL:    spec.URL,
		Path:   spec.Path,
		Ref:    git.Ref{Branch: spec.Ref.Branch, Tag: spec.Ref.Tag, Semver: spec.Ref.Semver, Commit: spec.Ref.Commit},
		Egress: r.gitEgress, // hostlimit.go
	}
	if err := src.Validate(); err != nil {
		return src, stalled(v1.ReasonInvalidSpec, err)
	}
	if src.IsLocal() && !r.opts.AllowLocalSources {
		return src, stalled(v1.ReasonInvalidSpec, fmt.Errorf("source url %s is a path on the agent's disk; "+
			"local sources are refused unless gitsync run is started with --allow-local-sources", git.RedactURL(spec.URL)))
	}
	return src, r.sourceAuth(ctx, gs, &src)
}

// sourceAuth reads spec.source.secretRef into src.Auth.
func (r *GitSyncReconciler) sourceAuth(ctx context.Context, gs *v1.GitSync, src *git.Source) error {
	spec, reader := gs.Spec.Source, r.secretsFor(gs)
	if spec.SecretRef == nil {
		return nil
	}
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: gs.Namespace, Name: spec.SecretRef.Name}
	if err := reader.Get(ctx, key, secret); err != nil {
		return retry(v1.ReasonFetchFailed, fmt.Errorf("Secret/%s/%s read failed: %w", key.Namespace, key.Name, err))
	}
	// The keys read are git.SecretKey*; the Secret's name and key names
	// let a refusal say which keys it has instead.
	src.Auth = git.AuthFromSecret(fmt.Sprintf("Secret/%s/%s", key.Namespace, key.Name), secret.Data)
	return nil
}

// resolve asks src's remote for the revision of its ref, sharing one
// ls-remote asked at notBefore or later with the GitSyncs that follow the
// same URL and ref with the same credentials (resolve.go), and records
// the duration and, on failure, its reason in the fetch metrics.
func (r *GitSyncReconciler) resolve(ctx context.Context, gs *v1.GitSync, src git.Source, notBefore time.Time) (git.Revision, error) {
	start := r.clock.Now()
	origin := ""
	if ref := gs.Spec.Source.SecretRef; ref != nil {
		origin = gs.Namespace + "/" + ref.Name
	}
	rev, err := r.resolver.resolve(ctx, src, origin, notBefore)
	reason := ""
	if err != nil {
		reason = asSyncError(classifyFetch(err), v1.ReasonFetchFailed).Reason
	}
	r.opts.Metrics.observeFetch(client.ObjectKeyFromObject(gs), r.clock.Since(start), reason)
	return rev, err
}

// secretsFor reads the Secrets gs names through the agent's Secret watch
// (secretwatch.go): no request once the watch has synced.
func (r *GitSyncReconciler) secretsFor(gs *v1.GitSync) client.Reader {
	return secretReader{w: r.secrets, user: client.ObjectKeyFromObject(gs)}
}
