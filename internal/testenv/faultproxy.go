package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// FaultProxy is a loopback reverse proxy in front of the test apiserver that
// answers chosen requests with a failure instead of forwarding them: an error
// status (500, 429 with Retry-After, 409, 503, ...), a delay, or a dropped
// connection. Everything else is forwarded to the apiserver with the Env's
// administrator credentials; watches stream through.
//
// Clients reach it over plain HTTP without credentials (Config, Kubeconfig):
// the proxy is the only one holding the apiserver's, as a real agent's
// transport would. Impersonation headers are forwarded.
type FaultProxy struct {
	// Config reaches the apiserver through the proxy as an administrator.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file for Config, for binaries.
	Kubeconfig string

	srv      *httptest.Server
	upstream *httputil.ReverseProxy

	mu     sync.Mutex
	rules  []*FaultRule
	legacy bool
}

// Fault says which requests a rule matches and what the proxy does to them.
type Fault struct {
	// Method is the HTTP method to match (GET, POST, PUT, PATCH, DELETE);
	// empty matches any.
	Method string
	// Path is a regular expression matched against the URL path, for example
	// `^/api/v1/namespaces/t-abc/configmaps/` or `/status$`; empty matches
	// any path.
	Path string
	// Query names query parameters the request must carry with exactly these
	// values; an empty value means the parameter must be absent (so
	// {"dryRun": ""} matches real writes only, {"watch": "true"} watches).
	Query map[string]string
	// Times is how many matching requests the rule acts on; zero means every
	// one until the rule is cleared.
	Times int

	// Status, when not zero, is the HTTP status to answer with, carrying a
	// metav1.Status body of the matching reason.
	Status int
	// RetryAfter is sent with a 429 or 503 (as header and status detail).
	RetryAfter time.Duration
	// Delay holds the request this long (or until the client gives up)
	// before acting on it; without Status or Drop it is then forwarded.
	Delay time.Duration
	// Drop closes the client's connection without an answer.
	Drop bool
	// Hold keeps the request until the channel is closed (or the client
	// gives up), then acts on it: a test stops the apiserver while an
	// apply is in flight so.
	Hold <-chan struct{}
	// After makes the rule act only once that rule has matched a request
	// ("fail status writes once ConfigMap c was applied").
	After *FaultRule

	// A rule without Status, Delay, Drop or Hold only counts the requests
	// it matches and forwards them.
}

// FaultRule is an injected fault; it counts the requests it matched.
type FaultRule struct {
	fault Fault
	path  *regexp.Regexp

	mu      sync.Mutex
	matched int
	cleared bool
	seen    chan struct{} // closed on the first match
}

// NewFaultProxy starts a proxy in front of e's apiserver until the test ends.
func (e *Env) NewFaultProxy(t testing.TB) *FaultProxy {
	t.Helper()
	p, err := e.StartFaultProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// StartFaultProxy starts a proxy in front of e's apiserver; Close stops it.
func (e *Env) StartFaultProxy() (*FaultProxy, error) {
	target, err := url.Parse(e.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("apiserver URL: %w", err)
	}
	admin := rest.CopyConfig(e.Config)
	admin.QPS, admin.Burst = -1, 0 // the proxy passes requests on; throttling is the client's business
	rt, err := rest.TransportFor(admin)
	if err != nil {
		return nil, fmt.Errorf("fault proxy transport: %w", err)
	}
	p := &FaultProxy{}
	p.upstream = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
			r.Out.Header.Del("Authorization") // the proxy's own identity is the administrator
		},
		Transport:     rt,
		FlushInterval: -1, // watches stream event by event
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			// The apiserver is unreachable (stopped by a test): the client
			// sees its connection fail, as it would without the proxy.
			drop(w)
		},
	}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.Config = &rest.Config{Host: p.srv.URL, QPS: e.Config.QPS, Burst: e.Config.Burst}
	dir, err := os.MkdirTemp(e.dir, "faultproxy-")
	if err != nil {
		p.srv.Close()
		return nil, err
	}
	p.Kubeconfig = filepath.Join(dir, "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["faultproxy"] = &clientcmdapi.Cluster{Server: p.srv.URL}
	kc.AuthInfos["faultproxy"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["faultproxy"] = &clientcmdapi.Context{Cluster: "faultproxy", AuthInfo: "faultproxy"}
	kc.CurrentContext = "faultproxy"
	if err := clientcmd.WriteToFile(*kc, p.Kubeconfig); err != nil {
		p.srv.Close()
		return nil, fmt.Errorf("write fault proxy kubeconfig: %w", err)
	}
	return p, nil
}

// Close stops the proxy and closes every connection through it.
func (p *FaultProxy) Close() {
	p.srv.CloseClientConnections()
	p.srv.Close()
}

// Inject adds a fault; rules are tried in the order they were added and the
// first that matches acts.
func (p *FaultProxy) Inject(f Fault) (*FaultRule, error) {
	r := &FaultRule{fault: f, seen: make(chan struct{})}
	if f.Path != "" {
		re, err := regexp.Compile(f.Path)
		if err != nil {
			return nil, fmt.Errorf("fault path %q: %w", f.Path, err)
		}
		r.path = re
	}
	p.mu.Lock()
	p.rules = append(p.rules, r)
	p.mu.Unlock()
	return r, nil
}

// MustInject is Inject that fails the test on a malformed fault.
func (p *FaultProxy) MustInject(t testing.TB, f Fault) *FaultRule {
	t.Helper()
	r, err := p.Inject(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Clear removes every rule; requests are forwarded again.
func (p *FaultProxy) Clear() {
	p.mu.Lock()
	rules := p.rules
	p.rules = nil
	p.mu.Unlock()
	for _, r := range rules {
		r.Clear()
	}
}

// Clear stops the rule from acting; Matched keeps its count.
func (r *FaultRule) Clear() {
	r.mu.Lock()
	r.cleared = true
	r.mu.Unlock()
}

// Matched returns how many requests the rule acted on.
func (r *FaultRule) Matched() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.matched
}

// Seen is closed when the rule acts on its first request.
func (r *FaultRule) Seen() <-chan struct{} { return r.seen }

// take reports whether the rule acts on req, counting it if so.
func (r *FaultRule) take(req *http.Request) bool {
	f := r.fault
	if f.Method != "" && f.Method != req.Method {
		return false
	}
	if r.path != nil && !r.path.MatchString(req.URL.Path) {
		return false
	}
	if f.After != nil && f.After.Matched() == 0 {
		return false
	}
	q := req.URL.Query()
	for k, v := range f.Query {
		if q.Get(k) != v {
			return false
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cleared || (f.Times > 0 && r.matched >= f.Times) {
		return false
	}
	r.matched++
	if r.matched == 1 {
		close(r.seen)
	}
	return true
}

func (p *FaultProxy) match(req *http.Request) *FaultRule {
	p.mu.Lock()
	rules := p.rules
	p.mu.Unlock()
	for _, r := range rules {
		if r.take(req) {
			return r
		}
	}
	return nil
}

// LegacyDiscovery makes clients discover through the proxy one group
// version at a time (/apis/<group>/<version>), as against an apiserver
// without aggregated discovery, so that a rule on one group's discovery
// path fails that group alone. With aggregated discovery (the default)
// one request to /apis answers for every group.
func (p *FaultProxy) LegacyDiscovery() {
	p.mu.Lock()
	p.legacy = true
	p.mu.Unlock()
}

func (p *FaultProxy) serve(w http.ResponseWriter, req *http.Request) {
	p.mu.Lock()
	legacy := p.legacy
	p.mu.Unlock()
	if legacy && (req.URL.Path == "/api" || req.URL.Path == "/apis") {
		req.Header.Set("Accept", "application/json")
	}
	r := p.match(req)
	if r == nil {
		p.upstream.ServeHTTP(w, req)
		return
	}
	f := r.fault
	if f.Hold != nil {
		select {
		case <-f.Hold:
		case <-req.Context().Done():
			return
		}
	}
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-req.Context().Done():
			t.Stop()
			return
		}
	}
	switch {
	case f.Drop:
		drop(w)
	case f.Status != 0:
		writeStatus(w, req, f.Status, f.RetryAfter)
	default:
		p.upstream.ServeHTTP(w, req)
	}
}

// drop closes the client's connection without writing a response.
func drop(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler) // net/http closes the connection
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // a reset, not a polite close
	}
	_ = conn.Close()
}

// writeStatus answers with code and the metav1.Status an apiserver sends
// with it.
func writeStatus(w http.ResponseWriter, req *http.Request, code int, retryAfter time.Duration) {
	secs := int(retryAfter / time.Second)
	if retryAfter > 0 && secs == 0 {
		secs = 1
	}
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Code:     int32(code),
		Reason:   reasonFor(code),
		Message:  fmt.Sprintf("injected fault: %s %s", req.Method, req.URL.Path),
	}
	if secs > 0 {
		st.Details = &metav1.StatusDetails{RetryAfterSeconds: int32(secs)}
	}
	if secs > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(&st)
}

// reasonFor is the reason an apiserver gives with code.
func reasonFor(code int) metav1.StatusReason {
	switch code {
	case http.StatusConflict:
		return metav1.StatusReasonConflict
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	case http.StatusInternalServerError:
		return metav1.StatusReasonInternalError
	case http.StatusGatewayTimeout:
		return metav1.StatusReasonTimeout
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	}
	return metav1.StatusReasonUnknown
}

// WaitSeen waits until r has matched a request or ctx ends.
func (r *FaultRule) WaitSeen(ctx context.Context) error {
	select {
	case <-r.seen:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("fault never matched: %w", ctx.Err())
	}
}
