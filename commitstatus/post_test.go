package commitstatus

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/internal/egress"
)

const (
	sha   = "0123456789abcdef0123456789abcdef01234567"
	token = "tok-SECRET-42"
)

// request is what a stand-in host received.
type request struct {
	Method, Path string
	Header       http.Header
	Body         map[string]any
}

// recorder keeps the requests a stand-in host received, its JSON body
// decoded.
type recorder struct {
	mu  sync.Mutex
	got []request
}

func (rec *recorder) record(r *http.Request) {
	var body map[string]any
	data, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(data, &body)
	rec.mu.Lock()
	rec.got = append(rec.got, request{Method: r.Method, Path: r.URL.EscapedPath(), Header: r.Header.Clone(), Body: body})
	rec.mu.Unlock()
}

func (rec *recorder) requests() []request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]request(nil), rec.got...)
}

// standIn is a Git host's API on loopback: it records each request and
// answers with status and body.
type standIn struct {
	*httptest.Server
	recorder
	code int
	body string
}

func newStandIn(t *testing.T, code int, body string) *standIn {
	t.Helper()
	s := &standIn{code: code, body: body}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.record(r)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s.code)
		_, _ = io.WriteString(w, s.body)
	}))
	t.Cleanup(s.Close)
	return s
}

func plainClient() *http.Client {
	var d net.Dialer
	return NewHTTPClient(d.DialContext, 0)
}

// TestPostRequestShape checks, per host, the method, path, auth header and
// JSON body each host documents, for each state.
func TestPostRequestShape(t *testing.T) {
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("me:"+token))
	long := strings.Repeat("x", 300)
	tests := []struct {
		name     string
		provider string
		repoURL  string
		creds    Credentials
		status   Status
		path     string
		header   [2]string // name, value
		body     map[string]any
	}{
		{
			name: "github pending", provider: "github", repoURL: "https://github.com/acme/app.git",
			creds:  Credentials{Token: token},
			status: Status{Commit: sha, State: Pending, Description: "applying", Context: "gitsync/ns/app"},
			path:   "/repos/acme/app/statuses/" + sha, header: [2]string{"Authorization", "Bearer " + token},
			body: map[string]any{"state": "pending", "description": "applying", "context": "gitsync/ns/app"},
		},
		{
			name: "github failure clipped to 140", provider: "github", repoURL: "git@github.com:acme/app.git",
			creds:  Credentials{Token: token},
			status: Status{Commit: sha, State: Failure, Description: long, Context: "c"},
			path:   "/repos/acme/app/statuses/" + sha, header: [2]string{"X-GitHub-Api-Version", "2022-11-28"},
			body: map[string]any{"state": "failure", "description": strings.Repeat("x", 137) + "…", "context": "c"},
		},
		{
			name: "gitlab subgroup running", provider: "gitlab", repoURL: "ssh://git@gitlab.example.com:2222/group/sub/app.git",
			creds:  Credentials{Token: token},
			status: Status{Commit: sha, State: Pending, Description: "applying", Context: "gitsync/ns/app"},
			path:   "/projects/group%2Fsub%2Fapp/statuses/" + sha, header: [2]string{"PRIVATE-TOKEN", token},
			body: map[string]any{"state": "running", "name": "gitsync/ns/app", "description": "applying"},
		},
		{
			name: "gitlab failed", provider: "gitlab", repoURL: "https://gitlab.com/group/app",
			creds:  Credentials{Token: token},
			status: Status{Commit: sha, State: Failure, Description: "apply failed", Context: "c"},
			path:   "/projects/group%2Fapp/statuses/" + sha, header: [2]string{"PRIVATE-TOKEN", token},
			body: map[string]any{"state": "failed", "name": "c", "description": "apply failed"},
		},
		{
			name: "gitea success", provider: "gitea", repoURL: "https://gitea.example.com/acme/app.git",
			creds:  Credentials{Token: token},
			status: Status{Commit: sha, State: Success, Description: "Applied revision main@sha1:" + sha, Context: "c"},
			path:   "/repos/acme/app/statuses/" + sha, header: [2]string{"Authorization", "token " + token},
			body: map[string]any{"state": "success", "description": "Applied revision main@sha1:" + sha, "context": "c"},
		},
		{
			name: "bitbucket app password", provider: "bitbucket", repoURL: "git@bitbucket.org:team/app.git",
			creds:  Credentials{Username: "me", Password: token},
			status: Status{Commit: sha, State: Pending, Description: "applying", Context: "gitsync/ns/app"},
			path:   "/repositories/team/app/commit/" + sha + "/statuses/build", header: [2]string{"Authorization", basic},
			body: map[string]any{"key": "gitsync/ns/app", "state": "INPROGRESS", "name": "gitsync/ns/app", "description": "applying",
				"url": "https://bitbucket.org/team/app/commits/" + sha},
		},
		{
			name: "bitbucket token, long context hashed into the key", provider: "bitbucket", repoURL: "https://bitbucket.org/team/app.git",
			creds:  Credentials{Token: token},
			status: Status{Commit: sha, State: Success, Description: "ok", Context: "gitsync/a-rather-long-namespace/a-rather-long-name"},
			path:   "/repositories/team/app/commit/" + sha + "/statuses/build", header: [2]string{"Authorization", "Bearer " + token},
			body: map[string]any{"key": bitbucketKey("gitsync/a-rather-long-namespace/a-rather-long-name"), "state": "SUCCESSFUL",
				"name": "gitsync/a-rather-long-namespace/a-rather-long-name", "description": "ok", "url": "https://bitbucket.org/team/app/commits/" + sha},
		},
		{
			name: "bitbucket failed", provider: "bitbucket", repoURL: "https://bitbucket.org/team/app.git",
			creds:  Credentials{Token: token},
			status: Status{Commit: sha, State: Failure, Description: "no", Context: "c"},
			path:   "/repositories/team/app/commit/" + sha + "/statuses/build", header: [2]string{"Authorization", "Bearer " + token},
			body: map[string]any{"key": "c", "state": "FAILED", "name": "c", "description": "no", "url": "https://bitbucket.org/team/app/commits/" + sha},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			host := newStandIn(t, http.StatusCreated, `{"id": 1}`)
			p, err := New(Options{Provider: tc.provider, RepoURL: tc.repoURL, Address: host.URL + "/", Credentials: tc.creds, Client: plainClient()})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Post(context.Background(), tc.status); err != nil {
				t.Fatalf("Post: %v", err)
			}
			got := host.requests()
			if len(got) != 1 {
				t.Fatalf("host got %d requests, want 1", len(got))
			}
			r := got[0]
			if r.Method != http.MethodPost || r.Path != tc.path {
				t.Errorf("request = %s %s, want POST %s", r.Method, r.Path, tc.path)
			}
			if v := r.Header.Get(tc.header[0]); v != tc.header[1] {
				t.Errorf("header %s = %q, want %q", tc.header[0], v, tc.header[1])
			}
			if ct := r.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if diff := cmp.Diff(tc.body, r.Body); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPostErrorCarriesNoCredential: a host that refuses and echoes the
// token back gets an error with the code and message, the token cut out.
// Checked by making redact a no-op (the token then shows).
func TestPostErrorCarriesNoCredential(t *testing.T) {
	for _, provider := range Providers {
		t.Run(provider, func(t *testing.T) {
			host := newStandIn(t, http.StatusUnauthorized, `{"message": "Bad credentials: `+token+`"}`)
			creds := Credentials{Token: token}
			p, err := New(Options{Provider: provider, RepoURL: "https://git.example.com/acme/app.git", Address: host.URL, Credentials: creds, Client: plainClient()})
			if err != nil {
				t.Fatal(err)
			}
			err = p.Post(context.Background(), Status{Commit: sha, State: Success, Context: "c"})
			var pe *PostError
			if !errors.As(err, &pe) || pe.Code != http.StatusUnauthorized {
				t.Fatalf("Post = %v, want a *PostError with code 401", err)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("error %q carries the token", err)
			}
			if !strings.Contains(err.Error(), "Bad credentials") {
				t.Errorf("error %q lost the host's message", err)
			}
		})
	}
}

// TestRedirectNotFollowed: a host answering with a redirect to another
// host sends the credentials nowhere. Checked by letting CheckRedirect
// return nil (the second host then sees the token).
func TestRedirectNotFollowed(t *testing.T) {
	other := newStandIn(t, http.StatusCreated, `{}`)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	p, err := New(Options{Provider: "github", RepoURL: "https://github.com/acme/app", Address: redirector.URL, Credentials: Credentials{Token: token}, Client: plainClient()})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Post(context.Background(), Status{Commit: sha, State: Success, Context: "c"})
	if err == nil || !strings.Contains(err.Error(), "redirect") {
		t.Errorf("Post = %v, want a refused redirect", err)
	}
	if n := len(other.requests()); n != 0 {
		t.Errorf("the redirect target got %d requests, want 0", n)
	}
}

// TestEgressPolicyApplies: with the agent's default egress policy a
// tenant's address on loopback is never reached. Checked by building the
// client with a plain dialer (the stand-in then gets the request).
func TestEgressPolicyApplies(t *testing.T) {
	host := newStandIn(t, http.StatusCreated, `{}`)
	d := &egress.Dialer{}
	p, err := New(Options{Provider: "gitea", RepoURL: "https://gitea.example.com/acme/app", Address: host.URL, Credentials: Credentials{Token: token}, Client: NewHTTPClient(d.DialContext, 0)})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Post(context.Background(), Status{Commit: sha, State: Success, Context: "c"})
	var pe *PostError
	if !errors.As(err, &pe) || pe.Code != 0 || !strings.Contains(pe.Message, "loopback") {
		t.Errorf("Post = %v, want a refusal naming the loopback address", err)
	}
	if n := len(host.requests()); n != 0 {
		t.Errorf("host got %d requests, want 0", n)
	}
}

// TestHangingHostIsBounded: a host that never answers costs one client
// timeout, then an error. Checked by passing a zero-timeout http.Client
// (the test then hangs until the stand-in is released).
func TestHangingHostIsBounded(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	t.Cleanup(func() { close(release); hang.Close() })
	var d net.Dialer
	client := NewHTTPClient(d.DialContext, 200*1e6)
	p, err := New(Options{Provider: "gitlab", RepoURL: "https://gitlab.com/g/app", Address: hang.URL, Credentials: Credentials{Token: token}, Client: client})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Post(context.Background(), Status{Commit: sha, State: Success, Context: "c"})
	var pe *PostError
	if !errors.As(err, &pe) || pe.Code != 0 {
		t.Errorf("Post = %v, want a transport error", err)
	}
}

// TestGitLabRepeatedState: GitLab's refusal to set a state a status already
// has is not a failure (a repeat after the agent restarted).
func TestGitLabRepeatedState(t *testing.T) {
	host := newStandIn(t, http.StatusBadRequest, `{"message": "Cannot transition status via :run from :running"}`)
	p, err := New(Options{Provider: "gitlab", RepoURL: "https://gitlab.com/g/app", Address: host.URL, Credentials: Credentials{Token: token}, Client: plainClient()})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Post(context.Background(), Status{Commit: sha, State: Pending, Context: "c"}); err != nil {
		t.Errorf("Post = %v, want nil", err)
	}
}

// TestBadCommitNotSent: a commit that is not a full hex SHA never becomes
// part of a request path.
func TestBadCommitNotSent(t *testing.T) {
	host := newStandIn(t, http.StatusCreated, `{}`)
	p, err := New(Options{Provider: "github", RepoURL: "https://github.com/acme/app", Address: host.URL, Credentials: Credentials{Token: token}, Client: plainClient()})
	if err != nil {
		t.Fatal(err)
	}
	for _, commit := range []string{"", "main", "../../user", strings.ToUpper(sha)} {
		if err := p.Post(context.Background(), Status{Commit: commit, State: Success}); err == nil {
			t.Errorf("Post(%q) = nil, want a refusal", commit)
		}
	}
	if n := len(host.requests()); n != 0 {
		t.Errorf("host got %d requests, want 0", n)
	}
}

func TestNewRefuses(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{name: "no client", o: Options{Provider: "github", RepoURL: "https://github.com/a/b"}, want: "client missing"},
		{name: "unknown provider", o: Options{Provider: "svn", RepoURL: "https://github.com/a/b", Address: "https://x"}, want: "unknown"},
		{name: "no token", o: Options{Provider: "github", RepoURL: "https://github.com/a/b"}, want: "needs a token"},
		{name: "bitbucket without password", o: Options{Provider: "bitbucket", RepoURL: "https://bitbucket.org/a/b", Credentials: Credentials{Username: "me"}}, want: "app password"},
		{name: "github one segment", o: Options{Provider: "github", RepoURL: "https://github.com/app", Credentials: Credentials{Token: "t"}}, want: "not OWNER/REPO"},
		{name: "gitlab one segment", o: Options{Provider: "gitlab", RepoURL: "https://gitlab.com/app", Credentials: Credentials{Token: "t"}}, want: "not GROUP/PROJECT"},
		{name: "address with credentials", o: Options{Provider: "gitea", RepoURL: "https://h/a/b", Address: "https://u:p@h/api/v1", Credentials: Credentials{Token: "t"}}, want: "must not carry credentials"},
		{name: "address not http", o: Options{Provider: "gitea", RepoURL: "https://h/a/b", Address: "file:///etc", Credentials: Credentials{Token: "t"}}, want: "not an http(s) URL"},
		{name: "file url without address", o: Options{Provider: "gitea", RepoURL: "file:///srv/a/b", Credentials: Credentials{Token: "t"}}, want: "address is required"},
		{name: "bitbucket server without address", o: Options{Provider: "bitbucket", RepoURL: "https://bb.example.com/a/b", Credentials: Credentials{Token: "t"}}, want: "address is required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.o.Client == nil && tc.name != "no client" {
				tc.o.Client = plainClient()
			}
			_, err := New(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want an error containing %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), ":p@") {
				t.Errorf("error %q carries the address's password", err)
			}
		})
	}
}

// TestWithCA: a host with a private CA is reached only with its CA added.
// Checked by making WithCA return c unchanged (the second post then fails
// on the unknown authority).
func TestWithCA(t *testing.T) {
	host := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) }))
	t.Cleanup(host.Close)
	opts := Options{Provider: "gitea", RepoURL: "https://gitea.example.com/a/b", Address: host.URL, Credentials: Credentials{Token: token}, Client: plainClient()}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Post(context.Background(), Status{Commit: sha, State: Success, Context: "c"}); err == nil {
		t.Fatal("Post to a host with an unknown CA = nil, want a certificate error")
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: host.Certificate().Raw})
	if opts.Client, err = WithCA(opts.Client, caPEM); err != nil {
		t.Fatal(err)
	}
	if p, err = New(opts); err != nil {
		t.Fatal(err)
	}
	if err := p.Post(context.Background(), Status{Commit: sha, State: Success, Context: "c"}); err != nil {
		t.Errorf("Post with the CA added = %v", err)
	}
	if _, err := WithCA(plainClient(), []byte("not a certificate")); err == nil {
		t.Error("WithCA(garbage) = nil error")
	}
}
