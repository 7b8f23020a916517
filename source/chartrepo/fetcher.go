package chartrepo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/utils/lru"

	"gitsync.dev/gitsync/internal/egress"
	"gitsync.dev/gitsync/source/helm"
)

// Options configures a Fetcher.
type Options struct {
	// Dir holds downloaded charts, one file per digest, shared by every
	// caller. Required.
	Dir string
	// Egress dials every connection; nil dials freely (the CLI, on the
	// user's own network, as its Git fetches).
	Egress *egress.Dialer
	// MaxIndexBytes caps one repository's index.yaml. Parsing one takes
	// ~14 times its size in heap at its peak (an 8 MiB index: ~111 MiB),
	// so the cap is what keeps a repository from exhausting the agent.
	MaxIndexBytes int64
	// MaxChartBytes caps one chart archive; a larger one could not be
	// rendered anyway (the render's per-file cap is the default).
	MaxChartBytes int64
	// IndexTTL is how long an index (or an OCI tag list) is kept in memory
	// per repository and Access: within it, a render of the same
	// dependencies asks the repository nothing.
	IndexTTL time.Duration
	// Timeout bounds each request.
	Timeout time.Duration
	// Now is the clock of the index cache; nil is time.Now.
	Now func() time.Time
}

// DefaultOptions caps an index at 8 MiB and a chart at 4 MiB (the
// render's per-file cap), keeps indexes 5 minutes and gives a request
// 60 seconds.
func DefaultOptions() Options {
	return Options{MaxIndexBytes: 8 << 20, MaxChartBytes: 4 << 20, IndexTTL: 5 * time.Minute, Timeout: 60 * time.Second}
}

// Fetcher resolves and downloads chart dependencies. It is safe for
// concurrent use.
type Fetcher struct {
	opts   Options
	client *http.Client
	store  store
	group  singleflight.Group

	mu      sync.Mutex
	indexes map[string]cachedIndex // repository URL + Access key → index
	// verdicts are the signers of charts verified: mode, repository,
	// digest, keys' sum → signer.
	verdicts *lru.Cache
}

// New validates opts, filling zero fields from DefaultOptions.
func New(opts Options) (*Fetcher, error) {
	if opts.Dir == "" {
		return nil, errors.New("chart repository options invalid: Dir is required")
	}
	d := DefaultOptions()
	if opts.MaxIndexBytes <= 0 {
		opts.MaxIndexBytes = d.MaxIndexBytes
	}
	if opts.MaxChartBytes <= 0 {
		opts.MaxChartBytes = d.MaxChartBytes
	}
	if opts.IndexTTL <= 0 {
		opts.IndexTTL = d.IndexTTL
	}
	if opts.Timeout <= 0 {
		opts.Timeout = d.Timeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	st, err := newStore(opts.Dir)
	if err != nil {
		return nil, err
	}
	return &Fetcher{opts: opts, client: newClient(opts), store: st, indexes: map[string]cachedIndex{}, verdicts: lru.New(4096)}, nil
}

// newClient is an HTTP client that dials only through the egress guard
// and uses no proxy (a proxy would hide the address from the guard).
func newClient(opts Options) *http.Client {
	dial := (&net.Dialer{Timeout: 30 * time.Second}).DialContext
	if opts.Egress != nil {
		dial = opts.Egress.DialContext
	}
	tr := &http.Transport{
		DialContext:           dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: opts.Timeout,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   opts.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("more than 5 redirects")
			}
			// Credentials stay with the host they were given for.
			if req.URL.Host != via[0].URL.Host {
				req.Header.Del("Authorization")
			}
			return nil
		},
	}
}

// Resolve finds and stores the chart of each need, reading each
// repository with acc's credentials, and returns the archives in the order
// of needs; a chart of a repository acc trusts only some keys for is
// verified (Verify). Nothing is returned unless every need resolved.
func (f *Fetcher) Resolve(ctx context.Context, needs []helm.Need, acc Access) ([]helm.Archive, error) {
	out := make([]helm.Archive, 0, len(needs))
	for _, n := range needs {
		if name, ok := helm.RepositoryAlias(n.Repository); ok {
			url, known := acc.Aliases[name]
			if !known {
				return nil, &AliasError{Chart: n.Name, Repository: n.Repository, Name: name}
			}
			n.Repository = strings.TrimSuffix(url, "/")
		}
		if err := checkRepositoryURL(n.Repository); err != nil {
			return nil, err
		}
		var a helm.Archive
		var err error
		if strings.HasPrefix(n.Repository, "oci://") {
			a, err = f.resolveOCI(ctx, n, acc)
		} else {
			a, err = f.resolveHTTP(ctx, n, acc)
		}
		if err == nil {
			_, err = f.Verify(ctx, n.Repository, a, acc)
		}
		var ue *UnverifiedError
		if errors.As(err, &ue) {
			return nil, err // it names the chart already
		}
		if err != nil {
			return nil, fmt.Errorf("chart %s %s from %s: %w", n.Name, n.Version, n.Repository, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// checkRepositoryURL refuses what the agent cannot or will not use.
func checkRepositoryURL(repo string) error {
	u, err := url.Parse(repo)
	if err != nil || u.Host == "" {
		return fmt.Errorf("chart repository %q is not a URL", stripUserinfo(repo))
	}
	if u.User != nil {
		return fmt.Errorf("chart repository %s carries credentials in its URL; give them as a repository's secretRef (spec.helm.repositories) or in the Helm configuration instead", stripUserinfo(repo))
	}
	return nil
}

// stripUserinfo drops user:password@ from a URL for messages.
func stripUserinfo(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	host, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(host, "@"); i >= 0 {
		host = host[i+1:]
	}
	if path != "" {
		return scheme + "://" + host + "/" + path
	}
	return scheme + "://" + host
}

// AuthError is a repository that refused the request's credentials (or
// asked for some and was given none).
type AuthError struct {
	// Repository is the repository's URL.
	Repository string
	// Status is the HTTP status, e.g. 401.
	Status int
	// Anonymous says no credentials were configured for it.
	Anonymous bool
}

func (e *AuthError) Error() string {
	if e.Anonymous {
		return fmt.Sprintf("%s answered %d %s: it needs credentials and none are configured for it (spec.helm.repositories[].secretRef; on a laptop, helm repo add --username or helm registry login)",
			e.Repository, e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("%s answered %d %s: the configured credentials were refused", e.Repository, e.Status, http.StatusText(e.Status))
}

// AliasError is a dependency naming its repository by an alias
// ("@NAME") nothing names: only a new spec, configuration or Chart.yaml
// fixes it.
type AliasError struct {
	Chart, Repository, Name string
}

func (e *AliasError) Error() string {
	return fmt.Sprintf("chart %s names its repository %s, which is not named: write the repository's URL, or give it the name "+
		"(a GitSync's spec.helm.repositories[].name; on a laptop, helm repo add %s URL)", e.Chart, e.Repository, e.Name)
}

// TooLargeError is an index or chart over its cap.
type TooLargeError struct {
	What  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than the %d-byte limit", e.What, e.Limit)
}
