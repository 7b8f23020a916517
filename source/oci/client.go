package oci

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"gitsync.dev/gitsync/internal/versions"
)

// Limits bound what one artifact may cost to read.
type Limits struct {
	// ManifestBytes caps the manifest (the registry states its size first).
	ManifestBytes int64
	// LayerBytes caps the compressed layer.
	LayerBytes int64
	// FileBytes caps the expanded layer: every file's bytes together.
	FileBytes int64
	// Files caps the entries of the layer (files and directories).
	Files int
	// Tags caps the tags a semver range is resolved over.
	Tags int
}

// DefaultLimits are 4 MiB of manifest, 64 MiB of layer, 256 MiB expanded
// in at most 20,000 entries, and 10,000 tags.
func DefaultLimits() Limits {
	return Limits{ManifestBytes: 4 << 20, LayerBytes: 64 << 20, FileBytes: 256 << 20, Files: 20_000, Tags: 10_000}
}

// Options say how a Client reaches registries.
type Options struct {
	// Transport carries every request (the agent's egress guard); nil is
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Auth is the credentials for the registry; nil is anonymous unless
	// Keychain finds some.
	Auth authn.Authenticator
	// Keychain looks credentials up per registry (the CLI's docker
	// config); used only when Auth is nil.
	Keychain authn.Keychain
	// PlainHTTP allows http:// registries; without it only https is spoken.
	PlainHTTP bool
	// PlainLoopback allows http:// to loopback registries only (the agent:
	// its egress guard still decides whether loopback may be dialled).
	PlainLoopback bool
	// Limits bound each artifact; zero fields take DefaultLimits'.
	Limits Limits
	// UserAgent names the caller to registries.
	UserAgent string
}

// Client resolves, pulls and pushes artifacts. It keeps one connection
// setup (the registry's ping and token exchange) per repository, so a
// Resolve of a repository asked before is one request.
type Client struct {
	opts   Options
	puller *remote.Puller
}

// New returns a Client with opts.
func New(opts Options) *Client {
	d := DefaultLimits()
	l := &opts.Limits
	for _, f := range []struct {
		v *int64
		d int64
	}{{&l.ManifestBytes, d.ManifestBytes}, {&l.LayerBytes, d.LayerBytes}, {&l.FileBytes, d.FileBytes}} {
		if *f.v <= 0 {
			*f.v = f.d
		}
	}
	if l.Files <= 0 {
		l.Files = d.Files
	}
	if l.Tags <= 0 {
		l.Tags = d.Tags
	}
	if opts.Transport == nil {
		opts.Transport = http.DefaultTransport
	}
	c := &Client{opts: opts}
	p, err := remote.NewPuller(c.remoteOptions()...)
	if err != nil {
		panic(err) // only bad options fail, and ours are fixed
	}
	c.puller = p
	return c
}

// remoteOptions are the library's options.
func (c *Client) remoteOptions() []remote.Option {
	out := []remote.Option{
		remote.WithTransport(&SchemeGuard{Next: c.opts.Transport, PlainHTTP: c.opts.PlainHTTP, PlainLoopback: c.opts.PlainLoopback}),
	}
	switch {
	case c.opts.Auth != nil:
		out = append(out, remote.WithAuth(c.opts.Auth))
	case c.opts.Keychain != nil:
		out = append(out, remote.WithAuthFromKeychain(c.opts.Keychain))
	}
	if c.opts.UserAgent != "" {
		out = append(out, remote.WithUserAgent(c.opts.UserAgent))
	}
	return out
}

// SchemeGuard refuses requests over plain HTTP unless allowed:
// go-containerregistry chooses http by itself for loopback, ".local" and
// RFC 1918 registries, where anyone on the path could then swap what is
// read. Every registry request gitsync sends goes through one.
type SchemeGuard struct {
	// Next sends the requests let through.
	Next http.RoundTripper
	// PlainHTTP lets every http request through (an operator's or user's
	// explicit choice).
	PlainHTTP bool
	// PlainLoopback lets http through to loopback hosts only (a registry
	// on the same machine; the egress guard still decides whether it may be
	// dialled at all).
	PlainLoopback bool
}

// ErrPlainHTTP marks a request refused because it would be sent over HTTP.
var ErrPlainHTTP = errors.New("plain HTTP to a registry is refused")

// RoundTrip sends req through Next unless it is refused.
func (g *SchemeGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" && !g.PlainHTTP && !(g.PlainLoopback && isLoopback(req.URL.Hostname())) {
		return nil, fmt.Errorf("%s %s: %w (allow it explicitly for a registry without TLS)", req.Method, req.URL.Host, ErrPlainHTTP)
	}
	return g.Next.RoundTrip(req)
}

// isLoopback reports whether host is "localhost" or a loopback address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// Resolve returns the revision a's Ref selects now: a digest as it is
// (no request), a tag by one HEAD of its manifest, a range by one tag
// listing and one HEAD of the highest tag satisfying it.
func (c *Client) Resolve(ctx context.Context, a Artifact) (Revision, error) {
	if err := a.Ref.Validate(); err != nil {
		return Revision{}, err
	}
	repo, err := a.repository(c.opts.PlainHTTP)
	if err != nil {
		return Revision{}, err
	}
	if a.Ref.Digest != "" {
		return Revision{Digest: a.Ref.Digest}, nil
	}
	tag := a.Ref.Tag
	if a.Ref.Semver != "" {
		if tag, err = c.highest(ctx, repo, a.Ref.Semver); err != nil {
			return Revision{}, err
		}
	}
	desc, err := c.puller.Head(ctx, repo.Tag(tag))
	if err != nil {
		return Revision{}, fmt.Errorf("%s:%s: %w", a.URL, tag, err)
	}
	return Revision{Tag: tag, Digest: desc.Digest.String()}, nil
}

// Reachable asks the registry, with the Client's credentials, whether a's
// manifest rev.Digest is there: one HEAD. A cache of what was pulled with
// other credentials asks it before handing out content of a digest Ref,
// which Resolve answers without a request.
func (c *Client) Reachable(ctx context.Context, a Artifact, rev Revision) error {
	repo, err := a.repository(c.opts.PlainHTTP)
	if err != nil {
		return err
	}
	if _, err := c.puller.Head(ctx, repo.Digest(rev.Digest)); err != nil {
		return fmt.Errorf("%s@%s: %w", a.URL, rev.Digest, err)
	}
	return nil
}

// highest is the highest tag of repo satisfying the range r.
func (c *Client) highest(ctx context.Context, repo name.Repository, r string) (string, error) {
	constraint, err := semver.NewConstraint(r)
	if err != nil {
		return "", fmt.Errorf("semver range %q: %v: %w", r, err, ErrInvalid)
	}
	tags, err := c.puller.List(ctx, repo)
	if err != nil {
		return "", fmt.Errorf("%s%s: list tags: %w", Scheme, repo.Name(), err)
	}
	if len(tags) > c.opts.Limits.Tags {
		return "", fmt.Errorf("%s%s lists %d tags, more than the %d a range is resolved over", Scheme, repo.Name(), len(tags), c.opts.Limits.Tags)
	}
	i := versions.Highest(tags, constraint, nil)
	if i < 0 {
		return "", fmt.Errorf("%s%s: no tag satisfies %q (%d tags listed)", Scheme, repo.Name(), r, len(tags))
	}
	return tags[i], nil
}
