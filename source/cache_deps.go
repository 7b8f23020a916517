package source

import (
	"context"
	"os"
	"strings"

	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/render"
)

// DependencyResolver fetches what a chart path needs from chart
// repositories before it renders (Chart.yaml dependencies that charts/
// does not hold). The Cache calls it in the agent's process; the render
// (maybe a child) only reads the archives it names.
type DependencyResolver interface {
	// Needs reads the chart at path of the checkout at root and says which
	// dependencies must be downloaded. It depends on the checkout only, so
	// the Cache keeps its answer per content key.
	Needs(ctx context.Context, root, path string) ([]helm.Need, error)
	// Resolve downloads (or finds stored) the charts of needs, asking each
	// repository with s.Charts, and returns s with them as its Helm
	// dependencies, which are in its Helm key.
	Resolve(ctx context.Context, needs []helm.Need, s render.Settings) (render.Settings, error)
}

// resolvedSettings returns s with the chart dependencies of the content
// key already known for key, resolved with s's own credentials (every Get
// asks the repositories itself, from their cached answers, so a render
// downloaded with someone else's credentials is never handed out without).
// known is false when the Cache has not read the chart's needs yet: load
// reads them from its checkout.
func (c *Cache) resolvedSettings(ctx context.Context, rev git.Revision, key string, s render.Settings) (render.Settings, bool, error) {
	if c.opts.Dependencies == nil || s.DownloadedChart() { // a packaged chart carries its dependencies
		return s, true, nil
	}
	c.mu.Lock()
	ck, ok := c.contents.get(key)
	var needs []helm.Need
	if ok && strings.HasPrefix(ck, git.ChartKeyPrefix) {
		needs, ok = c.needs.get(keyOf(rev.URL, ck, lastField(key)))
	}
	c.mu.Unlock()
	if !ok {
		return s, false, nil
	}
	if len(needs) == 0 {
		return s, true, nil
	}
	s, err := c.opts.Dependencies.Resolve(ctx, needs, s)
	return s, true, err
}

// loadDependencies reads the needs of a chart's checkout (checking it out
// now, kept for the render) and resolves them. dir is the checkout, or ""
// when there was nothing to read; the caller removes it.
func (c *Cache) loadDependencies(ctx context.Context, src git.Source, rev git.Revision, ck string, dirs []string, s render.Settings) (render.Settings, string, error) {
	dir, err := c.opts.Fetcher.CheckoutTrees(ctx, src, rev, dirs)
	if err != nil {
		return s, "", err
	}
	path := src.CleanPath()
	needs, err := c.opts.Dependencies.Needs(ctx, dir, path)
	if err != nil {
		os.RemoveAll(dir)
		return s, "", err
	}
	c.mu.Lock()
	c.needs.add(keyOf(rev.URL, ck, pathKey(path, s)), needs, 0)
	c.mu.Unlock()
	if len(needs) > 0 {
		if s, err = c.opts.Dependencies.Resolve(ctx, needs, s); err != nil {
			os.RemoveAll(dir)
			return s, "", err
		}
	}
	return s, dir, nil
}
