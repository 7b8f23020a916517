package webhook

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"gitsync.dev/gitsync/source/git"
)

// testSecret signs every test delivery unless a case says otherwise.
var testSecret = []byte("It's a Secret to Everybody")

// testNow is the fake clock's time for replay checks.
var testNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// testSource is a GitSync as the receiver's Lookup index sees it.
type testSource struct {
	key, url, branch string
	secret           []byte
}

var testSources = []testSource{
	{"ns/gh-main", "https://github.com/org/app.git", "main", testSecret},
	{"ns/gh-dev", "git@github.com:org/app.git", "dev", testSecret},
	{"ns/gh-tags", "https://github.com/org/app", "", testSecret},
	{"ns/gh-other-secret", "https://github.com/org/app", "main", []byte("another secret")},
	{"ns/gh-nosecret", "ssh://git@github.com/org/app", "main", nil},
	{"ns/gl-main", "https://gitlab.example.com/org/app", "main", testSecret},
	{"ns/bbc-main", "https://user@bitbucket.org/org/app.git", "main", testSecret},
	{"ns/bbs-main", "https://bitbucket.example.com/scm/org/app.git", "main", testSecret},
	{"ns/gitea-main", "https://gitea.example.com/org/app", "refs/heads/main", testSecret},
	{"ns/generic-main", "https://git.example.com/org/app", "main", testSecret},
	{"ns/generic-any", "https://git.example.com/org/app", "", testSecret},
}

// lookupIndex indexes sources by normalised URL, as a controller would.
func lookupIndex(sources []testSource) func(context.Context, string) []Target {
	idx := map[string][]Target{}
	for _, s := range sources {
		n := git.NormalizeRepoURL(s.url)
		idx[n] = append(idx[n], Target{Key: s.key, Branch: s.branch, Secret: s.secret})
	}
	return func(_ context.Context, url string) []Target { return idx[url] }
}

// recorder collects enqueued keys.
type recorder struct {
	mu   sync.Mutex
	keys []string
}

func (r *recorder) Enqueue(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, key)
}

func (r *recorder) Keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.keys)
	slices.Sort(out)
	return out
}

// observed collects what the receiver tells Observe.
type observed struct {
	mu         sync.Mutex
	deliveries []Delivery
}

func (o *observed) Observe(d Delivery) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.deliveries = append(o.deliveries, d)
}

func (o *observed) All() []Delivery {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.deliveries)
}

// newTestReceiver starts a receiver behind a real loopback HTTP server.
func newTestReceiver(t *testing.T, enqueue func(string), observe ...func(Delivery)) *httptest.Server {
	t.Helper()
	opts := DefaultOptions()
	opts.Lookup = lookupIndex(testSources)
	opts.Enqueue = enqueue
	opts.Clock = clocktesting.NewFakePassiveClock(testNow)
	if len(observe) > 0 {
		opts.Observe = observe[0]
	}
	rcv, err := NewReceiver(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	return srv
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/webhook/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Signers build each host's real headers for a body.
func githubHeaders(event string, body, secret []byte) http.Header {
	return http.Header{"X-Github-Event": {event}, "X-Hub-Signature-256": {signHexHMAC("sha256=", body, secret)}}
}

func gitlabHeaders(event string, _, secret []byte) http.Header {
	return http.Header{"X-Gitlab-Event": {event}, "X-Gitlab-Token": {string(secret)}}
}

func bitbucketHeaders(event string, body, secret []byte) http.Header {
	return http.Header{"X-Event-Key": {event}, "X-Hub-Signature": {signHexHMAC("sha256=", body, secret)}}
}

func giteaHeaders(event string, body, secret []byte) http.Header {
	return http.Header{"X-Gitea-Event": {event}, "X-Gitea-Signature": {signHexHMAC("", body, secret)}}
}

func genericHeaders(at time.Time, body, secret []byte) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	return http.Header{"X-Timestamp": {ts}, "X-Signature": {signHexHMAC("sha256=", genericSignedMessage(ts, body), secret)}}
}

// post sends one real HTTP request and returns the status and body.
func post(t *testing.T, url string, h http.Header, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestReceiverEnqueuesMatchingSources(t *testing.T) {
	github := readFixture(t, "github-push.json")
	githubTag := bytes.Replace(github, []byte(`"refs/heads/main"`), []byte(`"refs/tags/v1.2.0"`), 1)
	gitlab := readFixture(t, "gitlab-push.json")
	bbc := readFixture(t, "bitbucket-cloud-push.json")
	bbs := readFixture(t, "bitbucket-server-push.json")
	gitea := readFixture(t, "gitea-push.json")
	generic := readFixture(t, "generic.json")
	genericNoBranch := []byte(`{"repository": "git@git.example.com:org/app.git"}`)
	tests := []struct {
		name    string
		path    string
		headers http.Header
		body    []byte
		status  int
		want    []string
	}{
		{"github push to main", "/hook/github", githubHeaders("push", github, testSecret), github, 202,
			[]string{"ns/gh-main", "ns/gh-tags"}},
		{"github tag push wakes only ref-agnostic sources", "/hook/github", githubHeaders("push", githubTag, testSecret), githubTag, 202,
			[]string{"ns/gh-tags"}},
		{"github ping", "/hook/github", githubHeaders("ping", readFixture(t, "github-ping.json"), testSecret),
			readFixture(t, "github-ping.json"), 200, nil},
		{"github other event is ignored", "/hook/github", githubHeaders("issues", github, testSecret), github, 202, nil},
		{"gitlab push hook", "/hook/gitlab", gitlabHeaders("Push Hook", gitlab, testSecret), gitlab, 202, []string{"ns/gl-main"}},
		{"bitbucket cloud push", "/hook/bitbucket", bitbucketHeaders("repo:push", bbc, testSecret), bbc, 202, []string{"ns/bbc-main"}},
		{"bitbucket server refs changed", "/hook/bitbucket-server", bitbucketHeaders("repo:refs_changed", bbs, testSecret), bbs, 202,
			[]string{"ns/bbs-main"}},
		{"bitbucket server ping", "/hook/bitbucket-server", bitbucketHeaders("diagnostics:ping", []byte(`{}`), testSecret), []byte(`{}`), 200, nil},
		{"gitea push", "/hook/gitea", giteaHeaders("push", gitea, testSecret), gitea, 202, []string{"ns/gitea-main"}},
		{"generic with branch", "/hook/generic", genericHeaders(testNow, generic, testSecret), generic, 202,
			[]string{"ns/generic-any", "ns/generic-main"}},
		{"generic without branch wakes every source of the repo", "/hook/generic", genericHeaders(testNow.Add(-4*time.Minute), genericNoBranch, testSecret),
			genericNoBranch, 202, []string{"ns/generic-any", "ns/generic-main"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			srv := newTestReceiver(t, rec.Enqueue)
			status, _ := post(t, srv.URL+tt.path, tt.headers, bytes.NewReader(tt.body))
			if status != tt.status {
				t.Errorf("status = %d, want %d", status, tt.status)
			}
			if diff := cmp.Diff(tt.want, rec.Keys()); diff != "" {
				t.Errorf("enqueued (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReceiverRefuses: nothing is enqueued for a request that does not
// verify; a wrong or missing signature is answered like any push (202) and
// observed as bad_signature, so only the operator learns of it.
func TestReceiverRefuses(t *testing.T) {
	github := readFixture(t, "github-push.json")
	generic := readFixture(t, "generic.json")
	wrong := []byte("wrong secret")
	unknownRepo := bytes.ReplaceAll(github, []byte("org/app"), []byte("org/unknown"))
	huge := append([]byte(`{"ref":"refs/heads/main","repository":{"clone_url":"https://github.com/org/app"},"pad":"`),
		bytes.Repeat([]byte("x"), 1<<20)...)
	huge = append(huge, `"}`...)
	bodyOnlySig := http.Header{"X-Timestamp": {strconv.FormatInt(testNow.Unix(), 10)},
		"X-Signature": {signHexHMAC("sha256=", generic, testSecret)}}

	tests := []struct {
		name    string
		method  string
		path    string
		headers http.Header
		body    io.Reader
		status  int
		result  Result
	}{
		{"github bad signature", "", "/hook/github", githubHeaders("push", github, wrong), bytes.NewReader(github), 202, ResultBadSignature},
		{"github missing signature", "", "/hook/github", http.Header{"X-Github-Event": {"push"}}, bytes.NewReader(github), 202, ResultBadSignature},
		{"github signature not hex", "", "/hook/github", http.Header{"X-Github-Event": {"push"}, "X-Hub-Signature-256": {"sha256=zz"}},
			bytes.NewReader(github), 202, ResultBadSignature},
		{"github sha1 signature only", "", "/hook/github", http.Header{"X-Github-Event": {"push"}, "X-Hub-Signature": {"sha1=00"}},
			bytes.NewReader(github), 202, ResultBadSignature},
		{"github body changed after signing", "", "/hook/github", githubHeaders("push", github, testSecret),
			bytes.NewReader(bytes.Replace(github, []byte("main"), []byte("prod"), 1)), 202, ResultBadSignature},
		{"github missing event header", "", "/hook/github", http.Header{"X-Hub-Signature-256": {signHexHMAC("sha256=", github, testSecret)}},
			bytes.NewReader(github), 400, ResultMalformed},
		{"github malformed JSON", "", "/hook/github", githubHeaders("push", []byte("{"), testSecret), strings.NewReader("{"), 400, ResultMalformed},
		{"github push without repository", "", "/hook/github", githubHeaders("push", []byte(`{"ref":"refs/heads/main"}`), testSecret),
			strings.NewReader(`{"ref":"refs/heads/main"}`), 400, ResultMalformed},
		{"unknown repository", "", "/hook/github", githubHeaders("push", unknownRepo, testSecret), bytes.NewReader(unknownRepo), 202, ResultUnknownRepository},
		{"oversized body with Content-Length", "", "/hook/github", githubHeaders("push", huge, testSecret), bytes.NewReader(huge), 413, ResultTooLarge},
		{"oversized body chunked", "", "/hook/github", githubHeaders("push", huge, testSecret),
			io.MultiReader(bytes.NewReader(huge)), 413, ResultTooLarge},
		{"gitlab wrong token", "", "/hook/gitlab", gitlabHeaders("Push Hook", nil, wrong), bytes.NewReader(readFixture(t, "gitlab-push.json")), 202, ResultBadSignature},
		{"gitlab missing token", "", "/hook/gitlab", http.Header{"X-Gitlab-Event": {"Push Hook"}},
			bytes.NewReader(readFixture(t, "gitlab-push.json")), 202, ResultBadSignature},
		{"bitbucket cloud bad signature", "", "/hook/bitbucket", bitbucketHeaders("repo:push", nil, testSecret),
			bytes.NewReader(readFixture(t, "bitbucket-cloud-push.json")), 202, ResultBadSignature},
		{"bitbucket server bad signature", "", "/hook/bitbucket-server", bitbucketHeaders("repo:refs_changed", nil, testSecret),
			bytes.NewReader(readFixture(t, "bitbucket-server-push.json")), 202, ResultBadSignature},
		{"gitea bad signature", "", "/hook/gitea", giteaHeaders("push", nil, testSecret),
			bytes.NewReader(readFixture(t, "gitea-push.json")), 202, ResultBadSignature},
		{"generic replayed outside the window", "", "/hook/generic", genericHeaders(testNow.Add(-6*time.Minute), generic, testSecret),
			bytes.NewReader(generic), 202, ResultBadSignature},
		{"generic from the future", "", "/hook/generic", genericHeaders(testNow.Add(6*time.Minute), generic, testSecret),
			bytes.NewReader(generic), 202, ResultBadSignature},
		{"generic timestamp swapped after signing", "", "/hook/generic", func() http.Header {
			h := genericHeaders(testNow.Add(-time.Hour), generic, testSecret)
			h.Set("X-Timestamp", strconv.FormatInt(testNow.Unix(), 10))
			return h
		}(), bytes.NewReader(generic), 202, ResultBadSignature},
		{"generic signature over body only", "", "/hook/generic", bodyOnlySig, bytes.NewReader(generic), 202, ResultBadSignature},
		{"generic missing timestamp", "", "/hook/generic", http.Header{"X-Signature": {signHexHMAC("sha256=", generic, testSecret)}},
			bytes.NewReader(generic), 202, ResultBadSignature},
		{"generic absurd timestamp", "", "/hook/generic", http.Header{"X-Timestamp": {"-9223372036854775808"},
			"X-Signature": {"sha256=00"}}, bytes.NewReader(generic), 202, ResultBadSignature},
		{"generic missing repository", "", "/hook/generic", genericHeaders(testNow, []byte(`{"branch":"main"}`), testSecret),
			strings.NewReader(`{"branch":"main"}`), 400, ResultMalformed},
		{"GET", http.MethodGet, "/hook/github", nil, nil, 405, ResultMalformed},
		{"unknown path", "", "/hook/svn", githubHeaders("push", github, testSecret), bytes.NewReader(github), 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, obs := &recorder{}, &observed{}
			srv := newTestReceiver(t, rec.Enqueue, obs.Observe)
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			req, err := http.NewRequest(method, srv.URL+tt.path, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if _, chunked := tt.body.(*bytes.Reader); !chunked && tt.body != nil {
				req.ContentLength = -1
			}
			req.Header = tt.headers.Clone()
			if req.Header == nil {
				req.Header = http.Header{}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.status)
			}
			if got := rec.Keys(); len(got) != 0 {
				t.Errorf("enqueued %v, want nothing", got)
			}
			if bytes.Contains(body, testSecret) || bytes.Contains(body, []byte("org/app")) {
				t.Errorf("response %q carries detail", body)
			}
			var results []Result
			for _, d := range obs.All() {
				results = append(results, d.Result)
			}
			var want []Result
			if tt.result != "" {
				want = []Result{tt.result}
			}
			if diff := cmp.Diff(want, results); diff != "" {
				t.Errorf("observed results (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReceiverCoalescesBursts(t *testing.T) {
	trigger := NewTrigger()
	opts := DefaultOptions()
	opts.Lookup = lookupIndex([]testSource{{"ns/app", "https://github.com/org/app", "main", testSecret}})
	opts.Enqueue = trigger.Enqueue
	rcv, err := NewReceiver(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(ln.Addr().String(), rcv)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	body := readFixture(t, "github-push.json")
	const burst = 20
	var wg sync.WaitGroup
	statuses := make([]int, burst)
	for i := range burst {
		wg.Go(func() {
			statuses[i], _ = post(t, "http://"+ln.Addr().String()+"/hook/github", githubHeaders("push", body, testSecret), bytes.NewReader(body))
		})
	}
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusAccepted {
			t.Errorf("request %d status = %d, want 202", i, s)
		}
	}
	if n := trigger.Len(); n != 1 {
		t.Fatalf("%d identical pushes left %d pending keys, want 1", burst, n)
	}
	select {
	case <-trigger.Ready():
	default:
		t.Fatal("Ready has no signal after Enqueue")
	}
	if diff := cmp.Diff([]string{"ns/app"}, trigger.Take()); diff != "" {
		t.Errorf("Take (-want +got):\n%s", diff)
	}
	if n := trigger.Len(); n != 0 {
		t.Errorf("after Take %d keys pending, want 0", n)
	}
}

func TestTriggerRequeueAfterTake(t *testing.T) {
	tr := NewTrigger()
	tr.Enqueue("b")
	tr.Enqueue("a")
	tr.Enqueue("b")
	if diff := cmp.Diff([]string{"a", "b"}, tr.Take()); diff != "" {
		t.Errorf("Take (-want +got):\n%s", diff)
	}
	<-tr.Ready() // drain the signal from the first burst
	tr.Enqueue("a")
	select {
	case <-tr.Ready():
	default:
		t.Fatal("a key enqueued after Take did not signal Ready")
	}
	if diff := cmp.Diff([]string{"a"}, tr.Take()); diff != "" {
		t.Errorf("Take (-want +got):\n%s", diff)
	}
}

func TestNewReceiverValidates(t *testing.T) {
	if _, err := NewReceiver(Options{}); err == nil {
		t.Fatal("NewReceiver without Lookup and Enqueue succeeded")
	}
	rcv, err := NewReceiver(Options{Lookup: lookupIndex(nil), Enqueue: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(DefaultOptions().MaxBodyBytes, rcv.opts.MaxBodyBytes); diff != "" {
		t.Errorf("MaxBodyBytes default (-want +got):\n%s", diff)
	}
	srv := NewServer(":0", rcv)
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
		t.Errorf("NewServer left a timeout or cap unset: %+v", srv)
	}
}

func TestBranchMatches(t *testing.T) {
	tests := []struct {
		name   string
		branch string
		refs   []string
		want   bool
	}{
		{"same branch", "main", []string{"refs/heads/main"}, true},
		{"branch given as ref", "refs/heads/main", []string{"refs/heads/main"}, true},
		{"other branch", "main", []string{"refs/heads/dev"}, false},
		{"tag does not match a branch", "main", []string{"refs/tags/main"}, false},
		{"prefix is not a match", "main", []string{"refs/heads/main-2"}, false},
		{"any branch", "", []string{"refs/tags/v1"}, true},
		{"no refs means the repository changed", "main", nil, true},
		{"one of several", "main", []string{"refs/heads/dev", "refs/heads/main"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := branchMatches(tt.branch, tt.refs); got != tt.want {
				t.Errorf("branchMatches(%q, %v) = %v, want %v", tt.branch, tt.refs, got, tt.want)
			}
		})
	}
}
