package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/egress"
	"gitsync.dev/gitsync/prepare"
	"gitsync.dev/gitsync/source/chartrepo"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/oci"
	"gitsync.dev/gitsync/tenant"
)

// An oci:// spec.source is an OCI artifact holding a directory of
// manifests. The sync is the Git one from the revision on: the artifact's
// manifest digest is the revision (git.Revision.Digest), its render is
// cached by digest (source.Cache.GetPulled), and what only Git has (monorepo
// ranking, rewind detection, commit statuses) is skipped. A poll is one HEAD
// of the tag's manifest (a tag listing more for a semver range; for a digest
// the HEAD of the digest, so a render kept for it is handed only to a
// GitSync whose credentials reach it); nothing else is read while the
// digest stays the same.

// artifactSource is what reads one GitSync's artifact: where it is, and a
// client holding its credentials that dials only through the egress guard;
// for a chart source (chartsource.go), the chart archive resolved.
type artifactSource struct {
	artifact oci.Artifact
	client   *oci.Client
	chart    *helm.Archive
}

// pull writes the artifact of rev into dst (source.PullFunc).
func (a *artifactSource) pull(rev git.Revision) func(ctx context.Context, dst string) error {
	if a.chart != nil {
		return func(ctx context.Context, dst string) error { return chartrepo.Extract(*a.chart, dst) }
	}
	return func(ctx context.Context, dst string) error {
		_, err := a.client.Pull(ctx, a.artifact, oci.Revision{Tag: rev.Ref, Digest: rev.Digest}, dst)
		return err
	}
}

// artifacts holds the registry clients of every oci:// GitSync: one per
// distinct credentials, so GitSyncs reading one registry with the same
// credentials share its connection setup (ping, token exchange), and the
// verdicts of cosign verification per (artifact, digest, keys).
type artifacts struct {
	once      sync.Once
	transport http.RoundTripper
	clients   *lru.Cache // credentials digest → *oci.Client
	verdicts  *lru.Cache // url, digest, keys digest → signer
}

func (a *artifacts) init(d *egress.Dialer) {
	a.once.Do(func() {
		// No proxy: a proxy would hide the address from the guard.
		a.transport = &http.Transport{
			DialContext:           d.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          32,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: time.Minute,
		}
		a.clients, a.verdicts = lru.New(256), lru.New(4096)
	})
}

// client returns the registry client for credentials user and password
// ("" for anonymous). Plain HTTP is spoken to loopback registries only,
// and the egress guard decides whether loopback may be dialled at all.
func (a *artifacts) client(user, password string) *oci.Client {
	sum := sha256.Sum256([]byte(user + "\x00" + password))
	key := hex.EncodeToString(sum[:])
	if c, ok := a.clients.Get(key); ok {
		return c.(*oci.Client)
	}
	opts := oci.Options{Transport: a.transport, PlainLoopback: true, UserAgent: "gitsync-agent"}
	if user != "" || password != "" {
		opts.Auth = &authn.Basic{Username: user, Password: password}
	} else {
		opts.Auth = authn.Anonymous
	}
	c := oci.New(opts)
	a.clients.Add(key, c)
	return c
}

// artifactOf translates an oci:// spec.source into the artifact and the
// client that reads it, with the credentials of spec.source.secretRef read
// through the tenant boundary (which tells their values to the redactor).
func (r *GitSyncReconciler) artifactOf(ctx context.Context, gs *v1.GitSync, view *tenant.View) (*artifactSource, error) {
	spec := gs.Spec.Source
	a, _ := prepare.Artifact(gs)
	if err := a.Ref.Validate(); err != nil {
		return nil, stalled(v1.ReasonInvalidSpec, fmt.Errorf("spec.source.ref: %w", err))
	}
	if spec.Ref.Branch != "" || spec.Ref.Commit != "" {
		return nil, stalled(v1.ReasonInvalidSpec, errors.New("an oci:// source follows ref.tag, ref.semver or ref.digest; branches and commits are Git's"))
	}
	r.artifacts.init(&r.opts.Egress)
	creds, err := sourceCredentials(ctx, gs, view)
	if err != nil {
		return nil, err
	}
	user, password := "", ""
	if creds != nil {
		user, password = creds.Username, creds.Password
	}
	return &artifactSource{artifact: a, client: r.artifacts.client(user, password)}, nil
}

// artifactRevision resolves gs's artifact: one manifest HEAD for a tag or a
// digest, a tag listing and one HEAD for a semver range.
func (r *GitSyncReconciler) artifactRevision(ctx context.Context, gs *v1.GitSync, st *syncState, view *tenant.View, now time.Time) (git.Source, git.Revision, error) {
	_, path := prepare.Artifact(gs)
	src := git.Source{URL: gs.Spec.Source.URL, Path: path}
	a, err := r.artifactOf(ctx, gs, view)
	if err != nil {
		return src, git.Revision{}, err
	}
	start := r.clock.Now()
	res, err := a.client.Resolve(ctx, a.artifact)
	if err == nil && a.artifact.Ref.Digest != "" {
		// A digest resolves without a request; the render kept for it may
		// have been pulled with another GitSync's credentials, so this
		// GitSync's must reach it too.
		err = a.client.Reachable(ctx, a.artifact, res)
	}
	reason := ""
	if err != nil {
		err = classifyArtifact(err, gs.Spec.Source.SecretRef != nil)
		reason = asSyncError(err, v1.ReasonFetchFailed).Reason
	}
	r.opts.Metrics.ObserveFetch(client.ObjectKeyFromObject(gs), r.clock.Since(start), reason)
	if err != nil {
		return src, git.Revision{}, err
	}
	rev := git.Revision{URL: a.artifact.URL, Ref: res.Tag, Digest: res.Digest}
	st.resolved(gs, src, rev, now)
	st.setArtifact(a)
	return src, rev, nil
}

// artifactVerified checks rev's cosign signature against the public keys
// of spec.source.verify's Secret (every key ending ".pub"); a verdict is
// remembered per (artifact, digest, keys), so a converged GitSync reads no
// signature again. The signer is named by its key's fingerprint.
func (r *GitSyncReconciler) artifactVerified(ctx context.Context, gs *v1.GitSync, st *syncState, view *tenant.View, rev git.Revision) (string, error) {
	spec := gs.Spec.Source.Verify
	if spec == nil {
		return "", nil
	}
	if a := st.artifact(); spec.Mode == v1.VerifyProvenance || (a != nil && a.chart != nil) {
		if spec.Mode != v1.VerifyProvenance { // the CRD refuses it; an older CRD may not
			return "", stalled(v1.ReasonInvalidSpec, fmt.Errorf("a chart of an http(s):// repository verifies with spec.source.verify.mode Provenance, not %s", spec.Mode))
		}
		return r.chartSourceVerified(ctx, gs, st, view)
	}
	origin := fmt.Sprintf("Secret/%s/%s (spec.source.verify.secretRef)", gs.Namespace, spec.SecretRef.Name)
	if spec.Mode != v1.VerifyCosign {
		return "", stalled(v1.ReasonInvalidSpec, fmt.Errorf("an oci:// source verifies with spec.source.verify.mode Cosign, not %s", spec.Mode))
	}
	secret, err := view.Secret(ctx, tenant.Ref{Name: spec.SecretRef.Name, Field: "spec.source.verify.secretRef"})
	if err != nil {
		return "", classifyRead(fmt.Errorf("%s read failed: %w", origin, err), v1.ReasonVerificationFailed)
	}
	keys, sum, err := oci.SecretKeys(secret.Data, origin)
	if err != nil {
		return "", stalled(v1.ReasonVerificationFailed, err)
	}
	memo := rev.URL + "\x00" + rev.Digest + "\x00" + sum
	if signer, ok := r.artifacts.verdicts.Get(memo); ok {
		return signer.(string), nil
	}
	a := st.artifact()
	if a == nil {
		return "", retry(v1.ReasonFetchFailed, errors.New("artifact not resolved yet"))
	}
	signer, err := a.client.Verify(ctx, a.artifact, oci.Revision{Tag: rev.Ref, Digest: rev.Digest}, keys)
	if err != nil {
		return "", classifyArtifact(err, gs.Spec.Source.SecretRef != nil)
	}
	s := "cosign key " + signer.KeyID
	r.artifacts.verdicts.Add(memo, s)
	return s, nil
}

// classifyArtifact sorts a registry failure. What only a new spec or
// Secret can fix is Stalled: a malformed reference, plain HTTP to a
// registry off this machine, an address the egress policy denies, a
// signature that does not verify, an artifact too large or not a
// directory of files, refused credentials, no such repository or tag. An
// anonymous refusal is retried (the Secret may be added at any moment), as
// is anything about reaching the registry.
func classifyArtifact(err error, withCredentials bool) error {
	var se *syncError
	var denied *egress.DeniedError
	var terr *transport.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return err
	case errors.Is(err, oci.ErrInvalid), errors.Is(err, oci.ErrPlainHTTP), errors.As(err, &denied):
		return stalled(v1.ReasonInvalidSpec, err)
	case errors.Is(err, oci.ErrUnverified):
		return stalled(v1.ReasonVerificationFailed, err)
	case errors.Is(err, oci.ErrTooLarge), errors.Is(err, oci.ErrLayout):
		return stalled(v1.ReasonRenderFailed, err)
	case errors.As(err, &terr):
		switch terr.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			if !withCredentials {
				return retry(v1.ReasonAuthenticationRequired, fmt.Errorf("%w; set spec.source.secretRef to a Secret with keys %s and %s, or %s",
					err, chartrepo.SecretKeyUsername, chartrepo.SecretKeyPassword, chartrepo.SecretKeyDockerConfig))
			}
			return stalled(v1.ReasonAuthenticationFailed, err)
		case http.StatusNotFound:
			return stalled(v1.ReasonRefNotFound, fmt.Errorf("%w; check spec.source.url and spec.source.ref", err))
		}
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return retry(v1.ReasonHostUnreachable, err)
	}
	return classifyFetch(err)
}
