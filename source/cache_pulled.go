package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/render"
)

// PullFunc writes the content of one revision into dst, which does not
// exist yet: the whole content or nothing (oci.Client.Pull).
type PullFunc func(ctx context.Context, dst string) error

// artifactKeyPrefix starts the content key of an OCI artifact's render.
const artifactKeyPrefix = "oci:"

// GetPulled returns the artifact of a revision that names its content by
// digest (an OCI artifact: rev.Digest), pulling it with pull only when no
// render of the same digest, path and settings is kept. A digest's content
// never changes, so a kept render is never pulled again: a converged
// source costs its resolve alone. Concurrent callers of one key share one
// pull and render; a failure keeps nothing, so LastGood stays in place.
//
// The Helm settings are part of the key when the path holds a chart, as
// for Git (renderKey): sources of one artifact's plain path with different
// release names share its render. Whether it does is known after the first
// pull of the digest; until then the key holds them. A chart's
// dependencies must be vendored in the artifact: they are not downloaded.
func (c *Cache) GetPulled(ctx context.Context, src git.Source, rev git.Revision, pull PullFunc, s render.Settings) (*Artifact, error) {
	if rev.Digest == "" {
		return nil, fmt.Errorf("%s: a pulled revision needs a digest", rev)
	}
	ck := artifactKeyPrefix + rev.Digest
	path := src.CleanPath()
	c.mu.Lock()
	chart, known := c.charts.get(keyOf(rev.URL, ck, path))
	c.mu.Unlock()
	rkey := pulledKey(rev.URL, ck, path, s, chart || !known)
	if a, ok := c.lookupRender(rkey, ck, rev); ok {
		c.remember(src, a)
		return a, nil
	}
	return c.shared(ctx, rkey, src, rev, func(ctx context.Context) (*Artifact, error) {
		return c.loadPulled(ctx, rev, path, ck, pull, s)
	})
}

// pulledKey names the render of path of a pulled revision; the Helm
// settings enter it when the path is (or may be) a chart.
func pulledKey(url, ck, path string, s render.Settings, helm bool) string {
	pk := pathKey(path, s)
	if helm {
		pk += "\x01" + s.HelmKey()
	}
	return keyOf(url, ck, pk)
}

// lookupRender returns the kept render of rkey as rev's artifact.
func (c *Cache) lookupRender(rkey, ck string, rev git.Revision) (*Artifact, bool) {
	c.mu.Lock()
	p, ok := c.renders.get(rkey)
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	r, err := p.expand()
	if err != nil {
		return nil, false // pulled and rendered again
	}
	return &Artifact{Revision: rev, Rendered: r, ContentKey: ck, packed: p}, true
}

// loadPulled pulls rev into a new directory, renders path of it and keeps
// the render.
func (c *Cache) loadPulled(ctx context.Context, rev git.Revision, path, ck string, pull PullFunc, s render.Settings) (*Artifact, error) {
	parent, err := os.MkdirTemp(c.opts.PullDir, "pull-")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rev, err)
	}
	defer os.RemoveAll(parent)
	dir := filepath.Join(parent, "content")
	if err := pull(ctx, dir); err != nil {
		return nil, err
	}
	fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(path), helm.ChartFile))
	chart := err == nil && fi.Mode().IsRegular()
	c.mu.Lock()
	c.charts.add(keyOf(rev.URL, ck, path), chart, 0)
	c.mu.Unlock()
	rkey := pulledKey(rev.URL, ck, path, s, chart)
	r, err := c.opts.Render(ctx, dir, path, s)
	if err != nil {
		return nil, fmt.Errorf("%s render %s: %w", rev, path, err)
	}
	if r == nil {
		return nil, fmt.Errorf("%s render %s: renderer returned nothing", rev, path)
	}
	p, err := pack(r)
	if err == nil {
		c.mu.Lock()
		c.renders.add(rkey, p, p.size())
		c.mu.Unlock()
	} else {
		p = nil
	}
	return &Artifact{Revision: rev, Rendered: r, ContentKey: ck, packed: p}, nil
}
