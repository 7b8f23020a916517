package testenv

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// RequestCounter counts the requests a client sends to the apiserver, by
// what they cost the server, and remembers each one since the last Reset:
// the one request counter of gitsync's tests and benchmarks. Put it on a
// rest.Config with Wrap (or WrapTransport) before building clients from it.
type RequestCounter struct {
	// All counts every request. Watches counts the GETs that open a watch,
	// Reads every other GET and HEAD, Writes every other method, and DryRuns
	// the Writes that asked for a dry run (in the query, or in a DELETE's
	// body), so Writes − DryRuns is what changed the cluster.
	All, Watches, Reads, Writes, DryRuns atomic.Int64

	mu  sync.Mutex
	log []Request
}

// Request is one request a RequestCounter saw.
type Request struct {
	Method string
	// Path is the URL path, Query the raw query ("" when none).
	Path, Query   string
	Watch, DryRun bool
}

// String is "METHOD PATH?QUERY", the way a request is shown in a failure.
func (r Request) String() string {
	if r.Query == "" {
		return r.Method + " " + r.Path
	}
	return r.Method + " " + r.Path + "?" + r.Query
}

// Wrap returns a copy of cfg whose requests c counts (after any transport
// wrapper cfg already had).
func (c *RequestCounter) Wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	prev := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if prev != nil {
			rt = prev(rt)
		}
		return c.WrapTransport(rt)
	}
	return cfg
}

// WrapTransport counts the requests sent through rt; it is a
// rest.Config.WrapTransport.
func (c *RequestCounter) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return countingTransport{c: c, next: rt}
}

// Mutating is the number of requests that could change the cluster:
// Writes that were not dry runs.
func (c *RequestCounter) Mutating() int64 { return c.Writes.Load() - c.DryRuns.Load() }

// Requests returns the requests seen since the last Reset, in order.
func (c *RequestCounter) Requests() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Request(nil), c.log...)
}

// Reset sets every count back to zero and forgets the requests seen.
func (c *RequestCounter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range []*atomic.Int64{&c.All, &c.Watches, &c.Reads, &c.Writes, &c.DryRuns} {
		n.Store(0)
	}
	c.log = nil
}

func (c *RequestCounter) count(r *http.Request) {
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery}
	c.All.Add(1)
	switch {
	case r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true":
		req.Watch = true
		c.Watches.Add(1)
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		c.Reads.Add(1)
	default:
		c.Writes.Add(1)
		if r.URL.Query().Get("dryRun") != "" || dryRunBody(r) {
			req.DryRun = true
			c.DryRuns.Add(1)
		}
	}
	c.mu.Lock()
	c.log = append(c.log, req)
	c.mu.Unlock()
}

// dryRunBody reports whether r carries its dryRun option in the body, as a
// DELETE does, restoring the body for the transport.
func dryRunBody(r *http.Request) bool {
	if r.Method != http.MethodDelete || r.Body == nil {
		return false
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	return err == nil && bytes.Contains(body, []byte(`"dryRun":["All"]`))
}

type countingTransport struct {
	c    *RequestCounter
	next http.RoundTripper
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.c.count(r)
	return t.next.RoundTrip(r)
}

// JoinRequests formats requests one per line, for a failure message.
func JoinRequests(requests []Request) string {
	lines := make([]string, len(requests))
	for i, r := range requests {
		lines[i] = r.String()
	}
	return strings.Join(lines, "\n")
}
