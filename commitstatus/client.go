package commitstatus

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// errRedirect is returned for every redirect: the request's credentials
// must not follow a host's answer to another address.
var errRedirect = errors.New("the host answered with a redirect, which is not followed")

// DefaultTimeout bounds one post: long enough for a slow host, short enough
// that a black-holed address holds nothing for long.
const DefaultTimeout = 10 * time.Second

// NewHTTPClient returns the client Posters send with. dial connects to an
// address after the agent's egress policy allowed it
// (egress.Dialer.DialContext); the environment's proxy settings are ignored,
// since a proxy would be judged instead of the host; redirects are refused;
// each request is bounded by timeout (DefaultTimeout when <= 0).
func NewHTTPClient(dial func(ctx context.Context, network, addr string) (net.Conn, error), timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = dial
	tr.MaxIdleConnsPerHost = 2
	tr.IdleConnTimeout = time.Minute
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errRedirect
		},
	}
}
