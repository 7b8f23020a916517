package git

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/net/proxy"

	"gitsync.dev/gitsync/internal/egress"
)

// How a Source with an Egress dialer reaches its remote. go-git picks a
// transport per URL scheme from one process-wide table and has no dial hook
// for a single call, so the guard rides on the only per-call value it
// passes down, the AuthMethod:
//
//   - guardedAuth wraps the real credentials and names the Dialer;
//   - guardedProtocol, installed once for http, https and ssh the first time
//     a guarded Source is used, unwraps it and hands the session to a
//     transport that dials through that Dialer; any other AuthMethod goes to
//     go-git's own transport unchanged, so unguarded callers (the CLI) see
//     no difference;
//   - over http(s) that is an *http.Transport per Dialer whose DialContext is
//     the Dialer's, so redirects are checked as they connect and a pooled
//     connection is only ever reused under the policy that opened it;
//   - over ssh, go-git's only dial hook is a proxy URL: the session gets a
//     "gitsync-egress://<n>" proxy that golang.org/x/net/proxy resolves to
//     the Dialer.
//
// Other schemes that open connections (git://) have no hook and are refused
// for a guarded Source.

// guardedAuth carries a Source's credentials and its Dialer to guardedProtocol.
type guardedAuth struct {
	inner transport.AuthMethod
	route *guardedRoute
}

func (a *guardedAuth) Name() string { return "gitsync-egress" }

func (a *guardedAuth) String() string {
	if a.inner == nil {
		return a.Name()
	}
	return a.inner.String()
}

// guardedRoute is what one Dialer needs to carry Git traffic.
type guardedRoute struct {
	http     transport.Transport
	sshProxy string
}

const egressProxyScheme = "gitsync-egress"

var guards struct {
	once     sync.Once
	mu       sync.Mutex
	byDialer map[*egress.Dialer]*guardedRoute
	byName   map[string]*egress.Dialer
}

// routeFor returns the route of d, installing the guarded transports the
// first time.
func routeFor(d *egress.Dialer) *guardedRoute {
	guards.once.Do(installGuardedProtocols)
	guards.mu.Lock()
	defer guards.mu.Unlock()
	if r, ok := guards.byDialer[d]; ok {
		return r
	}
	name := strconv.Itoa(len(guards.byName) + 1)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = d.DialContext
	// A proxy would be dialed instead of the remote, and the check would
	// judge the proxy's address, not the one the tenant named.
	tr.Proxy = nil
	r := &guardedRoute{
		http:     githttp.NewClient(&http.Client{Transport: tr}),
		sshProxy: egressProxyScheme + "://" + name,
	}
	guards.byDialer[d] = r
	guards.byName[name] = d
	return r
}

func installGuardedProtocols() {
	guards.byDialer = map[*egress.Dialer]*guardedRoute{}
	guards.byName = map[string]*egress.Dialer{}
	proxy.RegisterDialerType(egressProxyScheme, func(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
		guards.mu.Lock()
		d, ok := guards.byName[u.Host]
		guards.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("egress dialer %q unknown", u.Host)
		}
		return contextDialer{d}, nil
	})
	for _, scheme := range []string{"http", "https", "ssh"} {
		client.InstallProtocol(scheme, guardedProtocol{fallback: client.Protocols[scheme], ssh: scheme == "ssh"})
	}
}

// contextDialer is an egress.Dialer as golang.org/x/net/proxy wants it.
type contextDialer struct{ d *egress.Dialer }

func (c contextDialer) Dial(network, addr string) (net.Conn, error) {
	return c.d.DialContext(context.Background(), network, addr)
}

func (c contextDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return c.d.DialContext(ctx, network, addr)
}

// guardedProtocol sends sessions carrying a guardedAuth through their
// Dialer and every other session to go-git's transport.
type guardedProtocol struct {
	fallback transport.Transport
	ssh      bool
}

func (p guardedProtocol) route(ep *transport.Endpoint, auth transport.AuthMethod) (transport.Transport, *transport.Endpoint, transport.AuthMethod) {
	ga, ok := auth.(*guardedAuth)
	if !ok {
		return p.fallback, ep, auth
	}
	if !p.ssh {
		return ga.route.http, ep, ga.inner
	}
	guarded := *ep
	guarded.Proxy = transport.ProxyOptions{URL: ga.route.sshProxy}
	return p.fallback, &guarded, ga.inner
}

func (p guardedProtocol) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	t, ep, auth := p.route(ep, auth)
	return t.NewUploadPackSession(ep, auth)
}

func (p guardedProtocol) NewReceivePackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.ReceivePackSession, error) {
	t, ep, auth := p.route(ep, auth)
	return t.NewReceivePackSession(ep, auth)
}

var _ transport.Transport = guardedProtocol{}

// guardAuth wraps auth so the session for ep dials through d. It refuses
// schemes it cannot guard.
func guardAuth(d *egress.Dialer, ep *transport.Endpoint, auth transport.AuthMethod) (transport.AuthMethod, error) {
	switch ep.Protocol {
	case "http", "https":
	case "ssh":
		if _, ok := auth.(gitssh.AuthMethod); !ok && auth != nil {
			return nil, fmt.Errorf("ssh auth of unexpected type %T", auth)
		}
	case "file":
		return auth, nil // no connection: allowing local sources is the caller's decision
	default:
		return nil, fmt.Errorf("scheme %s:// cannot be restricted to allowed networks; use https:// or ssh://: %w", ep.Protocol, ErrInvalidSource)
	}
	return &guardedAuth{inner: auth, route: routeFor(d)}, nil
}

// IsLocal reports whether the Source names a repository on this machine's
// disk (a file:// URL or a path) rather than a remote.
func (s Source) IsLocal() bool {
	ep, err := transport.NewEndpoint(s.URL)
	return err == nil && ep.Protocol == "file"
}
