package chartrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"gitsync.dev/gitsync/internal/versions"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/oci"
)

// Media types of a Helm chart in an OCI registry.
const (
	HelmConfigMediaType = "application/vnd.cncf.helm.config.v1+json"
	HelmChartMediaType  = oci.HelmChartContentMediaType
)

// maxManifestBytes caps an OCI manifest (a chart's is well under 1 KiB).
const maxManifestBytes = 4 << 20

// resolveOCI reads the manifest of n's chart in its registry and stores
// the chart layer.
func (f *Fetcher) resolveOCI(ctx context.Context, n helm.Need, acc Access) (helm.Archive, error) {
	repo, err := name.NewRepository(strings.TrimPrefix(n.Repository, "oci://") + "/" + n.Name)
	if err != nil {
		return helm.Archive{}, fmt.Errorf("not an OCI repository: %w", err)
	}
	opts := f.remoteOptions(ctx, n.Repository, acc)
	version, err := f.ociVersion(ctx, repo, n, acc, opts)
	if err != nil {
		return helm.Archive{}, f.ociErr(n.Repository, acc, err)
	}
	// Helm writes "+" of a version as "_" in a tag, which cannot hold "+".
	ref := repo.Tag(strings.ReplaceAll(version, "+", "_"))
	layer, manifest, err := f.chartLayer(ctx, ref, n.Repository, acc, opts)
	if err != nil {
		return helm.Archive{}, f.ociErr(n.Repository, acc, err)
	}
	a := helm.Archive{Name: n.Name, Version: version, Digest: layer.Digest.String(), Origin: repo.Digest(manifest).String()}
	if p, ok := f.store.has(a.Digest); ok {
		a.File = p
		return a, nil
	}
	if layer.Size > f.opts.MaxChartBytes {
		return helm.Archive{}, &TooLargeError{What: "chart " + n.Name + " " + version, Limit: f.opts.MaxChartBytes}
	}
	v, err, _ := f.group.Do("chart\x00"+a.Digest, func() (any, error) {
		l, err := remote.Layer(repo.Digest(a.Digest), opts...)
		if err != nil {
			return "", err
		}
		rc, err := l.Compressed()
		if err != nil {
			return "", err
		}
		defer rc.Close()
		data, err := io.ReadAll(io.LimitReader(rc, f.opts.MaxChartBytes+1))
		if err != nil {
			return "", err
		}
		if int64(len(data)) > f.opts.MaxChartBytes {
			return "", &TooLargeError{What: "chart " + n.Name + " " + version, Limit: f.opts.MaxChartBytes}
		}
		return f.store.put(a.Digest, data)
	})
	if err != nil {
		return helm.Archive{}, f.ociErr(n.Repository, acc, err)
	}
	a.File = v.(string)
	return a, nil
}

// ociVersion is n's version: the locked or exact one as given, else the
// highest tag its constraint allows (the tag list is kept IndexTTL).
func (f *Fetcher) ociVersion(ctx context.Context, repo name.Repository, n helm.Need, acc Access, opts []remote.Option) (string, error) {
	if _, err := semver.NewVersion(n.Version); err == nil {
		return n.Version, nil
	}
	c, err := semver.NewConstraint(n.Version)
	if err != nil {
		return "", fmt.Errorf("version %q is not a semver version or constraint: %w", n.Version, err)
	}
	tags, err := f.ociTags(ctx, repo, n.Repository, acc, opts)
	if err != nil {
		return "", err
	}
	i := versions.Highest(tags, c, func(t string) string { return strings.ReplaceAll(t, "_", "+") })
	if i < 0 {
		return "", fmt.Errorf("the registry has no tag of %s matching %s", n.Name, n.Version)
	}
	return strings.ReplaceAll(tags[i], "_", "+"), nil
}

// ociTags lists repo's tags, from memory within IndexTTL.
func (f *Fetcher) ociTags(ctx context.Context, repo name.Repository, base string, acc Access, opts []remote.Option) ([]string, error) {
	key := "tags\x00" + repo.String() + "\x00" + acc.Key(base)
	now := f.opts.Now()
	f.mu.Lock()
	c, ok := f.indexes[key]
	f.mu.Unlock()
	if ok && c.fresh(ctx, now, f.opts.IndexTTL) {
		return c.tags, nil
	}
	tags, err := remote.List(repo, opts...)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.indexes[key] = cachedIndex{tags: tags, at: now}
	f.mu.Unlock()
	return tags, nil
}

// chartLayer reads ref's manifest (from memory within IndexTTL) and
// returns its chart layer and the manifest's digest (what a cosign
// signature signs); a manifest that is not a Helm chart's is refused.
func (f *Fetcher) chartLayer(ctx context.Context, ref name.Tag, base string, acc Access, opts []remote.Option) (v1.Descriptor, string, error) {
	key := "manifest\x00" + ref.String() + "\x00" + acc.Key(base)
	now := f.opts.Now()
	f.mu.Lock()
	c, ok := f.indexes[key]
	f.mu.Unlock()
	if ok && c.fresh(ctx, now, f.opts.IndexTTL) {
		return c.layer, c.manifest, nil
	}
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		return v1.Descriptor{}, "", err
	}
	if len(desc.Manifest) > maxManifestBytes {
		return v1.Descriptor{}, "", &TooLargeError{What: "manifest " + ref.TagStr(), Limit: maxManifestBytes}
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return v1.Descriptor{}, "", fmt.Errorf("%s is not an image manifest: %w", ref.TagStr(), err)
	}
	if m.Config.MediaType != HelmConfigMediaType {
		return v1.Descriptor{}, "", fmt.Errorf("%s is not a Helm chart: its config is %s, not %s", ref.TagStr(), m.Config.MediaType, HelmConfigMediaType)
	}
	var layer *v1.Descriptor
	for i := range m.Layers {
		if m.Layers[i].MediaType == HelmChartMediaType {
			if layer != nil {
				return v1.Descriptor{}, "", fmt.Errorf("%s holds more than one chart layer", ref.TagStr())
			}
			layer = &m.Layers[i]
		}
	}
	if layer == nil {
		return v1.Descriptor{}, "", fmt.Errorf("%s has no layer of media type %s", ref.TagStr(), HelmChartMediaType)
	}
	if layer.Digest.Algorithm != "sha256" {
		return v1.Descriptor{}, "", fmt.Errorf("%s's chart layer is named by %s, not sha256", ref.TagStr(), layer.Digest.Algorithm)
	}
	f.mu.Lock()
	f.indexes[key] = cachedIndex{layer: *layer, manifest: desc.Digest.String(), at: now}
	f.mu.Unlock()
	return *layer, desc.Digest.String(), nil
}

// remoteOptions talk to a registry through the Fetcher's client with
// acc's credentials for repo.
func (f *Fetcher) remoteOptions(ctx context.Context, repo string, acc Access) []remote.Option {
	auth := registryAuth(repo, acc)
	return []remote.Option{
		remote.WithContext(ctx),
		// A chart's oci:// URL cannot say "no TLS": http is refused but to
		// loopback, where the library would otherwise pick it for private
		// addresses too.
		remote.WithTransport(&oci.SchemeGuard{Next: f.client.Transport, PlainLoopback: true}),
		remote.WithAuth(auth),
		remote.WithUserAgent("gitsync"),
		remote.WithRetryStatusCodes(), // the caller's next reconcile retries
	}
}

// registryAuth is what acc presents to repo's registry: its credentials,
// else nothing.
func registryAuth(repo string, acc Access) authn.Authenticator {
	if r, ok := acc.forURL(repo); ok {
		return authn.FromConfig(authn.AuthConfig{Username: r.Username, Password: r.Password})
	}
	return authn.Anonymous
}

// ociErr turns a registry's refusal into an *AuthError and keeps the rest.
func (f *Fetcher) ociErr(repo string, acc Access, err error) error {
	var te *transport.Error
	if errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden) {
		_, has := acc.forURL(repo)
		return &AuthError{Repository: repo, Status: te.StatusCode, Anonymous: !has}
	}
	return err
}
