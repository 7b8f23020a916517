package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"

	"gitsync.dev/gitsync/tracing"
	"go.opentelemetry.io/otel/attribute"

	"golang.org/x/sync/singleflight"

	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/render"
)

// RenderFunc renders path (relative, "/"-separated) of the checkout at root
// with one source's settings. The Cache takes it as a parameter so it never
// depends on a renderer.
type RenderFunc func(ctx context.Context, root, path string, s render.Settings) (*render.Rendered, error)

// TreeRenderFunc renders path of a repository tree held in memory (no
// symlinks), plain YAML only: render.ErrNeedsEngine sends the path to
// RenderFunc over a checkout.
type TreeRenderFunc func(ctx context.Context, fsys fs.FS, path string, s render.Settings) (*render.Rendered, error)

// CacheOptions configures a Cache.
type CacheOptions struct {
	// Fetcher resolves and fetches. Required.
	Fetcher *git.Fetcher
	// Render turns a checkout path into objects. Required; usually a closure
	// over render.Render with the caller's render.Options.
	Render RenderFunc
	// RenderTree, when set, renders paths of plain YAML (content keys
	// git.TreeKeyPrefix) from their Git tree read into memory, without a
	// checkout; it must give what Render gives for the same files.
	RenderTree TreeRenderFunc
	// MaxEntries bounds the renders kept, so memory stays flat with many sources.
	MaxEntries int
	// MaxBytes bounds the approximate size (JSON bytes) of the renders kept;
	// 0 means only MaxEntries applies.
	MaxBytes int64
	// Dependencies, when set, downloads a chart's dependencies from chart
	// repositories before it renders; nil leaves them to the render (which
	// refuses a chart whose dependencies are not vendored).
	Dependencies DependencyResolver
	// PullDir is where GetPulled writes what it pulls while it renders;
	// empty is the system's temporary directory.
	PullDir string
}

// DefaultCacheOptions keeps up to 4,096 renders and 256 MiB of them
// (packed). The count must exceed the paths an agent follows: a push to a
// monorepo of 500 GitSyncs re-rendered every path when only 256 renders
// were kept, though one changed. Packed renders are small (a few hundred
// bytes per object), and each GitSync's last good render is kept anyway.
func DefaultCacheOptions() CacheOptions {
	return CacheOptions{MaxEntries: 4096, MaxBytes: 256 << 20}
}

// Artifact is the rendered content of one git.Source at one git.Revision.
type Artifact struct {
	// Revision is what the Source resolved to. Rewritten and Previous are set
	// only by the Get that first fetched this commit.
	Revision git.Revision
	// Rendered is shared between callers and must not be modified.
	Rendered *render.Rendered
	// ContentKey names the render's input (see git.Fetcher.ContentKey); commits with the
	// same key share one render.
	ContentKey string

	// packed is Rendered as the Cache keeps it (cache_pack.go); nil when
	// it could not be packed, and then Rendered is kept as it is.
	packed *packedRender
}

// kept is a as the Cache holds it between uses: packed, without the
// expanded objects (which are garbage once the caller is done).
func (a *Artifact) kept() *Artifact {
	if a.packed == nil {
		return a
	}
	return &Artifact{Revision: a.Revision, ContentKey: a.ContentKey, packed: a.packed}
}

// expanded is a kept artifact with a fresh copy of its objects.
func (a *Artifact) expanded() (*Artifact, error) {
	if a.Rendered != nil || a.packed == nil {
		return a, nil
	}
	r, err := a.packed.expand()
	if err != nil {
		return nil, err
	}
	out := *a
	out.Rendered = r
	return &out, nil
}

// Cache maps (repository, commit, path) to rendered objects. A commit that
// does not change the path's tree reuses the previous render without a
// checkout; concurrent Gets of one key share one fetch and render; a failed
// fetch or render stores nothing, so the last good artifact stays in place.
type Cache struct {
	opts  CacheOptions
	group singleflight.Group

	mu       sync.Mutex
	contents *lru[string]         // url|commit|path → content key
	renders  *lru[*packedRender]  // url|content key|path → render, packed
	needs    *lru[[]helm.Need]    // url|content key|path → chart dependencies to download
	charts   *lru[bool]           // url|digest|path of a pulled revision → whether the path is a chart
	last     map[string]*Artifact // kept (packed) artifacts
}

// NewCache validates opts, filling zero bounds from DefaultCacheOptions.
func NewCache(opts CacheOptions) (*Cache, error) {
	if opts.Fetcher == nil || opts.Render == nil {
		return nil, errors.New("cache options invalid: Fetcher and Render are required")
	}
	def := DefaultCacheOptions()
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = def.MaxEntries
	}
	if opts.MaxBytes < 0 {
		return nil, errors.New("cache options invalid: negative MaxBytes")
	}
	return &Cache{
		opts:     opts,
		contents: newLRU[string](opts.MaxEntries*4, 0),
		renders:  newLRU[*packedRender](opts.MaxEntries, opts.MaxBytes),
		needs:    newLRU[[]helm.Need](opts.MaxEntries, 0),
		charts:   newLRU[bool](opts.MaxEntries, 0),
		last:     map[string]*Artifact{},
	}, nil
}

// Get resolves src (one listing request) and returns the artifact for the
// revision it points at, fetching and rendering only on a miss.
func (c *Cache) Get(ctx context.Context, src git.Source) (*Artifact, error) {
	rev, err := c.opts.Fetcher.Resolve(ctx, src)
	if err != nil {
		return nil, err
	}
	return c.GetRevision(ctx, src, rev)
}

// GetRevision returns the artifact for an already resolved revision,
// rendered with zero render.Settings.
func (c *Cache) GetRevision(ctx context.Context, src git.Source, rev git.Revision) (*Artifact, error) {
	return c.GetRevisionWith(ctx, src, rev, render.Settings{})
}

// GetRevisionWith is GetRevision with one source's render settings: sources
// whose settings differ get renders of their own (see renderKey).
func (c *Cache) GetRevisionWith(ctx context.Context, src git.Source, rev git.Revision, s render.Settings) (*Artifact, error) {
	key := keyOf(rev.URL, rev.Commit, pathKey(src.CleanPath(), s))
	s, resolved, err := c.resolvedSettings(ctx, rev, key, s)
	if err != nil {
		return nil, err
	}
	if a, ok := c.lookup(key, rev, s); ok && resolved {
		c.remember(src, a)
		return a, nil
	}
	// Callers with other chart credentials do not share a load that
	// downloads with them.
	return c.shared(ctx, key+"\x00"+s.HelmKey()+"\x00"+s.Charts.Fingerprint(), src, rev, func(ctx context.Context) (*Artifact, error) {
		return c.load(ctx, src, rev, key, s, resolved)
	})
}

// shared runs load once for the concurrent callers of key and returns its
// artifact as src's, remembered as its last good one. The load runs
// detached from any one caller's cancellation, since other callers may be
// waiting on it (the Fetcher's and the render's timeouts still bound it);
// a caller that joined someone else's load gets its own revision rev (its
// ref name, its tag).
func (c *Cache) shared(ctx context.Context, key string, src git.Source, rev git.Revision, load func(context.Context) (*Artifact, error)) (*Artifact, error) {
	ch := c.group.DoChan(key, func() (any, error) { return load(context.WithoutCancel(ctx)) })
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		a := *res.Val.(*Artifact)
		if res.Shared {
			a.Revision = rev
		}
		c.remember(src, &a)
		return &a, nil
	}
}

// LastGood returns the artifact of the last successful Get for src's URL,
// ref and path, so a caller can keep reporting it while the newest
// revision fails to fetch or render.
func (c *Cache) LastGood(src git.Source) (*Artifact, bool) {
	c.mu.Lock()
	a, ok := c.last[sourceKey(src)]
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	a, err := a.expanded()
	return a, err == nil
}

func (c *Cache) lookup(key string, rev git.Revision, s render.Settings) (*Artifact, bool) {
	c.mu.Lock()
	ck, ok := c.contents.get(key)
	var p *packedRender
	if ok {
		p, ok = c.renders.get(renderKey(rev.URL, ck, lastField(key), s))
	}
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	r, err := p.expand()
	if err != nil {
		return nil, false // rendered again
	}
	return &Artifact{Revision: rev, Rendered: r, ContentKey: ck, packed: p}, true
}

// load fetches rev, and renders it unless a render of the same content key
// is cached.
func (c *Cache) load(ctx context.Context, src git.Source, rev git.Revision, key string, s render.Settings, resolved bool) (*Artifact, error) {
	f := c.opts.Fetcher
	fctx, fspan := tracing.Start(ctx, "fetch")
	rev, err := f.Fetch(fctx, src, rev)
	tracing.End(fspan, err)
	if err != nil {
		return nil, err
	}
	var in git.Inputs
	if s.DownloadedChart() {
		in, err = f.ChartInputs(src, rev.Commit)
	} else {
		in, err = f.Inputs(src, rev.Commit)
	}
	if err != nil {
		return nil, err
	}
	ck := in.Key
	path := src.CleanPath()
	// A chart's dependencies are read from its checkout the first time its
	// content is seen; the checkout then serves the render too.
	dir := ""
	if !resolved && c.opts.Dependencies != nil && strings.HasPrefix(ck, git.ChartKeyPrefix) {
		if s, dir, err = c.loadDependencies(ctx, src, rev, ck, in.Dirs, s); err != nil {
			return nil, fmt.Errorf("%s render %s: %w", rev, path, err)
		}
		defer os.RemoveAll(dir)
	}
	rkey := renderKey(rev.URL, ck, pathKey(path, s), s)
	c.mu.Lock()
	p, hit := c.renders.get(rkey)
	if hit {
		c.contents.add(key, ck, 0)
	}
	c.mu.Unlock()
	var r *render.Rendered
	if hit {
		if r, err = p.expand(); err != nil {
			hit = false // rendered again below
		}
	}
	if !hit {
		// Only what the render reads: the path, or the path and the bases
		// its kustomizations name, or everything.
		rctx, rspan := tracing.Start(ctx, "render", attribute.String("gitsync.path", path))
		r, err = c.render(rctx, src, rev, path, in, dir, s)
		if r != nil {
			rspan.SetAttributes(attribute.Int("gitsync.objects", len(r.Objects)))
		}
		tracing.End(rspan, err)
		if err != nil {
			return nil, err
		}
		// A render that cannot be packed (it always can: it came from
		// JSON) is not cached.
		if p, err = pack(r); err == nil {
			c.mu.Lock()
			c.renders.add(rkey, p, p.size())
			c.contents.add(key, ck, 0)
			c.mu.Unlock()
		} else {
			p = nil
		}
	}
	return &Artifact{Revision: rev, Rendered: r, ContentKey: ck, packed: p}, nil
}

// render renders path of rev's checkout: dir when the caller has one,
// else its tree in memory when it is plain YAML, else a new checkout of
// in's directories.
func (c *Cache) render(ctx context.Context, src git.Source, rev git.Revision, path string, in git.Inputs, dir string, s render.Settings) (*render.Rendered, error) {
	if dir == "" && c.opts.RenderTree != nil && strings.HasPrefix(in.Key, git.TreeKeyPrefix) && len(in.Dirs) == 1 {
		fsys, err := c.opts.Fetcher.ReadTree(ctx, src, rev, in.Dirs[0])
		switch {
		case err == nil:
			r, err := c.opts.RenderTree(ctx, fsys, path, s)
			if !errors.Is(err, render.ErrNeedsEngine) {
				return rendered(rev, path, r, err)
			}
		case !errors.Is(err, git.ErrNotInMemory):
			return nil, err
		}
	}
	if dir == "" {
		var err error
		if dir, err = c.opts.Fetcher.CheckoutTrees(ctx, src, rev, in.Dirs); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	r, err := c.opts.Render(ctx, dir, path, s)
	return rendered(rev, path, r, err)
}

// rendered is a render's result as render returns it.
func rendered(rev git.Revision, path string, r *render.Rendered, err error) (*render.Rendered, error) {
	if err != nil {
		return nil, fmt.Errorf("%s render %s: %w", rev, path, err)
	}
	if r == nil {
		return nil, fmt.Errorf("%s render %s: renderer returned nothing", rev, path)
	}
	return r, nil
}

func (c *Cache) remember(src git.Source, a *Artifact) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last[sourceKey(src)] = a.kept()
}

func keyOf(url, id, path string) string { return url + "\x00" + id + "\x00" + path }

// pathKey is path plus the settings every render of it depends on (the
// ignore rules, the post-render changes, whether a downloaded chart
// renders it); it never holds a NUL, so
// lastField finds it again. Without either it is the path alone, so
// sources sharing a path without them share its render.
func pathKey(path string, s render.Settings) string {
	if s.DownloadedChart() { // the content key is then the whole tree's (ChartInputs)
		path += "\x01chart"
	}
	if k := s.IgnoreKey(); k != "" {
		path += "\x01" + k
	}
	if k := s.PostRenderKey(); k != "" {
		path += "\x01" + k
	}
	return path
}

// renderKey names one render: the Helm settings matter only for a chart
// path (git.ChartKeyPrefix), so sources sharing a plain path with different
// Helm settings still share its render.
func renderKey(url, ck, pk string, s render.Settings) string {
	if strings.HasPrefix(ck, git.ChartKeyPrefix) {
		pk += "\x01" + s.HelmKey()
	}
	return keyOf(url, ck, pk)
}

func lastField(key string) string {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == 0 {
			return key[i+1:]
		}
	}
	return key
}

func sourceKey(src git.Source) string {
	return src.Key()
}
