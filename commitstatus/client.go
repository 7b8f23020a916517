package commitstatus

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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

// WithCA returns a copy of c that also trusts the PEM certificates in caPEM
// (a self-hosted host with a private CA), keeping c's dialer, timeout and
// redirect refusal.
func WithCA(c *http.Client, caPEM []byte) (*http.Client, error) {
	tr, ok := c.Transport.(*http.Transport)
	if !ok {
		return nil, errors.New("commit status client has no *http.Transport to add a CA to")
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("ca.crt holds no PEM certificate")
	}
	tr = tr.Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	out := *c
	out.Transport = tr
	return &out, nil
}
