package webui

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// stand is a Backend of fixed GitSyncs that records its actions: the
// server's own logic (guard, routes, escaping, live stream) is what these
// tests check; the cluster side is tested in cmd/gitsync with a browser.
type stand struct {
	mu      sync.Mutex
	items   []Summary
	actions []string
	changes chan struct{}
	// duringList, when set, runs inside List (a change while a page reads).
	duringList func()
}

func (b *stand) List(context.Context) ([]Summary, error) {
	if b.duringList != nil {
		b.duringList()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Summary(nil), b.items...), nil
}

func (b *stand) Detail(_ context.Context, key types.NamespacedName) (*Detail, error) {
	b.mu.Lock()
	items := append([]Summary(nil), b.items...)
	b.mu.Unlock()
	for _, s := range items {
		if s.Key() == key {
			return &Detail{Summary: s, Objects: []Object{{Kind: "Secret", Namespace: key.Namespace, Name: "creds", Status: "Current"}}}, nil
		}
	}
	return nil, &notFound{key}
}

type notFound struct{ key types.NamespacedName }

func (e *notFound) Error() string { return "GitSync/" + e.key.String() + " not found" }

func (b *stand) Preview(_ context.Context, key types.NamespacedName, branch string) (string, error) {
	return "ConfigMap/" + key.Namespace + "/a configure (branch " + branch + ")", nil
}

func (b *stand) Reconcile(_ context.Context, key types.NamespacedName) error {
	b.record("reconcile " + key.String())
	return nil
}

func (b *stand) Suspend(_ context.Context, key types.NamespacedName, suspend bool) error {
	if suspend {
		b.record("suspend " + key.String())
	} else {
		b.record("resume " + key.String())
	}
	return nil
}

func (b *stand) Changes() <-chan struct{} { return b.changes }

func (b *stand) record(a string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.actions = append(b.actions, a)
}

func (b *stand) done() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.actions...)
}

// serve starts s on a loopback port and returns its base URL.
func serve(t *testing.T, b Backend) (*Server, string) {
	t.Helper()
	return serveMasked(t, b, nil)
}

// serveMasked is serve with the pages passed through mask.
func serveMasked(t *testing.T, b Backend, mask func(string) string) (*Server, string) {
	t.Helper()
	s, err := New(b, mask)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, "http://" + ln.Addr().String()
}

func newStand() *stand {
	return &stand{changes: make(chan struct{}), items: []Summary{
		{Namespace: "prod", Name: "web", State: StateReady, Revision: "main@sha1:" + strings.Repeat("ab", 20), Message: "Applied <b>7</b> objects"},
		{Namespace: "prod", Name: "jobs", State: StateFailed, Reason: "ApplyFailed", Message: `<script>alert(1)</script>`},
	}}
}

func get(t *testing.T, c *http.Client, u, host string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if host != "" {
		req.Host = host
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// TestPagesEscapeAndList: the list shows every GitSync with its state and
// short revision, a message's markup is text, and a page answers only to
// its own loopback host.
func TestPagesEscapeAndList(t *testing.T) {
	_, base := serve(t, newStand())
	code, body := get(t, http.DefaultClient, base+"/", "")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d\n%s", code, body)
	}
	for _, want := range []string{`href="/gitsyncs/prod/web"`, `href="/gitsyncs/prod/jobs"`, "main@sha1:abababababab", "&lt;script&gt;alert(1)&lt;/script&gt;", "Applied &lt;b&gt;7&lt;/b&gt; objects", `class="state failed"`} {
		if !strings.Contains(body, want) {
			t.Errorf("list lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<script>alert") {
		t.Error("a message's markup reached the page unescaped")
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	for _, host := range []string{"evil.example:" + port, "127.0.0.1:1", "10.0.0.1:" + port} {
		if code, _ := get(t, http.DefaultClient, base+"/", host); code != http.StatusMisdirectedRequest {
			t.Errorf("Host %s: %d, want 421", host, code)
		}
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port} {
		if code, _ := get(t, http.DefaultClient, base+"/", host); code != http.StatusOK {
			t.Errorf("Host %s: %d, want 200", host, code)
		}
	}
	if code, body := get(t, http.DefaultClient, base+"/gitsyncs/prod/web?fragment=1", ""); code != http.StatusOK || strings.Contains(body, "<html") || !strings.Contains(body, "creds") {
		t.Errorf("fragment: %d, want the content alone:\n%s", code, body)
	}
	if code, _ := get(t, http.DefaultClient, base+"/gitsyncs/prod/gone", ""); code != http.StatusNotFound {
		t.Errorf("unknown GitSync: %d, want 404", code)
	}
}

// TestActionsNeedThePagesToken: an action is taken only with the token of
// a page and from the page's origin; a forged post changes nothing.
func TestActionsNeedThePagesToken(t *testing.T) {
	b := newStand()
	_, base := serve(t, b)
	_, page := get(t, http.DefaultClient, base+"/gitsyncs/prod/web", "")
	m := regexp.MustCompile(`name="token" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no token in the page:\n%s", page)
	}
	token := m[1]
	post := func(action string, form url.Values, hdr map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, base+"/gitsyncs/prod/web/"+action, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	forged := []struct {
		name string
		form url.Values
		hdr  map[string]string
	}{
		{"no token", url.Values{}, nil},
		{"wrong token", url.Values{"token": {"x" + token}}, nil},
		{"other origin", url.Values{"token": {token}}, map[string]string{"Origin": "http://evil.example"}},
		{"cross site", url.Values{"token": {token}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"opaque origin", url.Values{"token": {token}}, map[string]string{"Origin": "null"}},
	}
	for _, f := range forged {
		if code := post("reconcile", f.form, f.hdr); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", f.name, code)
		}
	}
	if got := b.done(); len(got) != 0 {
		t.Fatalf("forged posts acted: %v", got)
	}
	origin := map[string]string{"Origin": base, "Sec-Fetch-Site": "same-origin"}
	for _, a := range []string{"reconcile", "suspend", "resume"} {
		if code := post(a, url.Values{"token": {token}}, origin); code != http.StatusSeeOther {
			t.Errorf("%s: %d, want 303", a, code)
		}
	}
	if code := post("delete", url.Values{"token": {token}}, origin); code != http.StatusNotFound {
		t.Errorf("an unknown action: %d, want 404", code)
	}
	want := []string{"reconcile prod/web", "suspend prod/web", "resume prod/web"}
	if got := b.done(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("actions %v, want %v", got, want)
	}
	if _, body := get(t, http.DefaultClient, base+"/gitsyncs/prod/web?did=<b>x</b>", ""); strings.Contains(body, "&lt;b&gt;x") || strings.Contains(body, "<b>x") {
		t.Error("a notice shows text from the address")
	}
}

// TestLiveStreamsChanges: a live page's stream says hello with the current
// version and sends the next one at each change of the Backend.
func TestLiveStreamsChanges(t *testing.T) {
	b := newStand()
	_, base := serve(t, b)
	resp, err := http.Get(base + "/live")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	next := func() string {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(line, "data: ") {
				return strings.TrimSpace(strings.TrimPrefix(line, "data: "))
			}
		}
	}
	if v := next(); v != "0" {
		t.Fatalf("hello carries %s, want 0", v)
	}
	for _, want := range []string{"1", "2"} {
		select {
		case b.changes <- struct{}{}:
		case <-time.After(time.Minute):
			t.Fatal("the server does not follow the Backend's changes")
		}
		if v := next(); v != want {
			t.Fatalf("change carries %s, want %s", v, want)
		}
	}
}

// TestListenRefusesOtherAddresses: the view is never offered beyond
// loopback.
func TestListenRefusesOtherAddresses(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.com:0"} {
		if ln, err := Listen(addr); err == nil {
			ln.Close()
			t.Errorf("Listen(%q) accepted", addr)
		}
	}
}

// TestPagesAreMasked: every page, whole or as the live fragment, goes
// through the mask New was given (gitsync ui's is the process's redactor,
// which knows the values a preview read from Secrets).
func TestPagesAreMasked(t *testing.T) {
	b := newStand()
	const secret = "variable-from-a-secret"
	_, base := serveMasked(t, b, func(s string) string { return strings.ReplaceAll(s, secret, "***") })
	for _, path := range []string{"/gitsyncs/prod/web/preview?branch=" + secret, "/gitsyncs/prod/web/preview?fragment=1&branch=" + secret} {
		_, body := get(t, http.DefaultClient, base+path, "")
		if strings.Contains(body, secret) || !strings.Contains(body, "(branch ***)") {
			t.Errorf("%s is not masked:\n%s", path, body)
		}
	}
}

// TestPageVersionPrecedesItsRead: a live page carries the version taken
// before its Backend read, so a change during the read leaves the page
// behind the stream's hello, and its script fetches it again (app.js)
// instead of showing the older read until the next change.
func TestPageVersionPrecedesItsRead(t *testing.T) {
	b := newStand()
	s, base := serve(t, b)
	var once sync.Once
	b.duringList = func() {
		once.Do(func() {
			b.changes <- struct{}{}
			for v, _ := s.current(); v == 0; v, _ = s.current() {
				<-time.After(time.Millisecond) // polling the server's version, bumped by its follower
			}
		})
	}
	_, body := get(t, http.DefaultClient, base+"/", "")
	if !strings.Contains(body, `data-version="0"`) {
		t.Errorf("the page read during change 1 says another version:\n%s", body)
	}
	_, body = get(t, http.DefaultClient, base+"/", "")
	if !strings.Contains(body, `data-version="1"`) {
		t.Errorf("the next page does not say version 1:\n%s", body)
	}
}
