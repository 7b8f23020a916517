package chartrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"go.yaml.in/yaml/v3"

	"gitsync.dev/gitsync/internal/versions"
	"gitsync.dev/gitsync/source/helm"
)

// index is the part of a repository's index.yaml a resolution reads.
type index struct {
	APIVersion string                  `yaml:"apiVersion"`
	Entries    map[string][]indexEntry `yaml:"entries"`
}

// indexEntry is one version of one chart.
type indexEntry struct {
	Version string   `yaml:"version"`
	URLs    []string `yaml:"urls"`
	Digest  string   `yaml:"digest"`
}

// cachedIndex is an answer kept IndexTTL: an HTTP repository's index, an
// OCI repository's tags, or an OCI tag's chart layer.
type cachedIndex struct {
	idx      *index
	tags     []string
	layer    v1.Descriptor
	manifest string // the digest of layer's manifest
	at       time.Time
}

// fresh reports whether c may answer at now: read within ttl, and not
// before what the context asks (FreshAfter).
func (c cachedIndex) fresh(ctx context.Context, now time.Time, ttl time.Duration) bool {
	return now.Sub(c.at) < ttl && !c.at.Before(freshAfter(ctx))
}

type freshKey struct{}

// FreshAfter asks the Fetcher's lookups under ctx for indexes, tag lists
// and manifests read at t or later: a GitSync whose source is a chart polls
// its repository once per interval (and at once when asked), while
// chart dependencies share what was read within the IndexTTL.
func FreshAfter(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, freshKey{}, t)
}

func freshAfter(ctx context.Context) time.Time {
	t, _ := ctx.Value(freshKey{}).(time.Time)
	return t
}

// resolveHTTP picks n's version from its repository's index and stores its
// archive.
func (f *Fetcher) resolveHTTP(ctx context.Context, n helm.Need, acc Access) (helm.Archive, error) {
	idx, err := f.index(ctx, n.Repository, acc)
	if err != nil {
		return helm.Archive{}, err
	}
	e, err := pick(idx.Entries[n.Name], n)
	if err != nil {
		return helm.Archive{}, err
	}
	digest := e.Digest
	if !strings.HasPrefix(digest, "sha256:") {
		digest = "sha256:" + digest // index.yaml lists the bare hex
	}
	chartURL, err := resolveChartURL(n.Repository, e.URLs[0])
	if err != nil {
		return helm.Archive{}, err
	}
	a := helm.Archive{Name: n.Name, Version: e.Version, Digest: digest, Origin: chartURL}
	if p, ok := f.store.has(digest); ok {
		a.File = p
		return a, nil
	}
	v, err, _ := f.group.Do("chart\x00"+digest, func() (any, error) {
		data, err := f.get(ctx, n.Repository, chartURL, acc, f.opts.MaxChartBytes, "chart "+n.Name+" "+e.Version)
		if err != nil {
			return "", err
		}
		return f.store.put(digest, data)
	})
	if err != nil {
		return helm.Archive{}, err
	}
	a.File = v.(string)
	return a, nil
}

// pick is the entry n asks for: its locked version, else the highest its
// constraint allows (pre-releases only when the constraint names one), as
// Helm resolves a dependency. Entries without a download URL or digest are
// not candidates.
func pick(entries []indexEntry, n helm.Need) (indexEntry, error) {
	if len(entries) == 0 {
		return indexEntry{}, fmt.Errorf("the repository's index has no chart %s", n.Name)
	}
	c, err := semver.NewConstraint(n.Version)
	if err != nil {
		return indexEntry{}, fmt.Errorf("version %q is not a semver version or constraint: %w", n.Version, err)
	}
	var candidates []indexEntry
	var names []string
	for _, e := range entries {
		if len(e.URLs) > 0 {
			candidates, names = append(candidates, e), append(names, e.Version)
		}
	}
	i := versions.Highest(names, c, nil)
	if i < 0 {
		return indexEntry{}, fmt.Errorf("the repository's index has no version of %s matching %s", n.Name, n.Version)
	}
	best := candidates[i]
	if best.Digest == "" {
		return indexEntry{}, fmt.Errorf("the repository's index lists no digest for %s %s, so the download could not be checked", n.Name, best.Version)
	}
	return best, nil
}

// index returns repo's index as read with acc, from memory when read
// within IndexTTL.
func (f *Fetcher) index(ctx context.Context, repo string, acc Access) (*index, error) {
	key := repo + "\x00" + acc.Key(repo)
	now := f.opts.Now()
	f.mu.Lock()
	c, ok := f.indexes[key]
	f.mu.Unlock()
	if ok && c.fresh(ctx, now, f.opts.IndexTTL) {
		return c.idx, nil
	}
	v, err, _ := f.group.Do("index\x00"+key, func() (any, error) {
		data, err := f.get(ctx, repo, strings.TrimSuffix(repo, "/")+"/index.yaml", acc, f.opts.MaxIndexBytes, "index.yaml")
		if err != nil {
			return nil, err
		}
		var idx index
		// yaml.v3 straight into the struct: sigs.k8s.io/yaml's detour
		// through JSON allocated half as much again.
		if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&idx); err != nil {
			return nil, fmt.Errorf("index.yaml is not a Helm repository index: %w", err)
		}
		if idx.APIVersion == "" {
			return nil, errors.New("index.yaml is not a Helm repository index: no apiVersion")
		}
		f.mu.Lock()
		f.indexes[key] = cachedIndex{idx: &idx, at: now}
		f.mu.Unlock()
		return &idx, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*index), nil
}

// get reads target, at most limit bytes, sending acc's credentials for
// repo when target is on repo's host.
func (f *Fetcher) get(ctx context.Context, repo, target string, acc Access, limit int64, what string) ([]byte, error) {
	repoURL, err := url.Parse(repo)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("%s URL is invalid", what)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "gitsync")
	cred, hasCred := acc.forURL(repo)
	if hasCred && sameHost(repoURL, u) {
		req.SetBasicAuth(cred.Username, cred.Password)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, scrubURLError(err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, &AuthError{Repository: repo, Status: resp.StatusCode, Anonymous: !hasCred}
	case resp.StatusCode != http.StatusOK:
		return nil, &StatusError{What: what, URL: stripUserinfo(u.String()), Status: resp.StatusCode, Text: resp.Status}
	}
	if resp.ContentLength > limit {
		return nil, &TooLargeError{What: what, Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, scrubURLError(err))
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{What: what, Limit: limit}
	}
	return data, nil
}

// StatusError is a repository's answer other than 200 OK (and the
// refusals an *AuthError is).
type StatusError struct {
	// What was read; URL where, without credentials.
	What, URL string
	// Status is the HTTP status code; Text its line ("404 Not Found").
	Status int
	Text   string
}

func (e *StatusError) Error() string { return fmt.Sprintf("%s: %s answered %s", e.What, e.URL, e.Text) }

// resolveChartURL resolves an index entry's URL against its repository
// (relative URLs are relative to the repository's directory).
func resolveChartURL(repo, ref string) (string, error) {
	base, err := url.Parse(strings.TrimSuffix(repo, "/") + "/")
	if err != nil {
		return "", err
	}
	u, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("index URL %q is invalid", ref)
	}
	u = base.ResolveReference(u)
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("index URL %q is not http(s)", stripUserinfo(u.String()))
	}
	return u.String(), nil
}

// scrubURLError keeps a *url.Error's cause without its URL, which could
// carry a query string the repository gave.
func scrubURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
