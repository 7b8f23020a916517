package git

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/internal/egress"
	"gitsync.dev/gitsync/internal/gittest"
)

// dialRecorder is the network under an egress.Dialer in tests: it records
// every address the Dialer decided to dial and opens a connection only to
// a loopback address, so no test sends traffic off this machine even with
// the policy's checks removed.
type dialRecorder struct {
	mu    sync.Mutex
	addrs []string
}

func (r *dialRecorder) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	r.mu.Lock()
	r.addrs = append(r.addrs, addr)
	r.mu.Unlock()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip, err := netip.ParseAddr(host); err != nil || !ip.Unmap().IsLoopback() {
		return nil, errors.New("dial recorder: only loopback connections are opened in tests")
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func (r *dialRecorder) dialed(host string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.addrs, func(a string) bool { h, _, _ := net.SplitHostPort(a); return h == host })
}

// names resolves from a table, so no lookup leaves the machine.
type names map[string]string

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := n[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// TestEgressGuardsGitRemotes: with a Source's Egress set, http(s) and ssh
// remotes on denied addresses (by IP or by a name resolving there) fail as
// ErrInvalidSource naming the host, before any connection: the servers see
// no request and the recorder no dial. Allowed ones work through the same
// Dialer. Checked by making Policy.Check accept everything (every denied
// case fails on the recorder's dials, which open nothing off this machine),
// and by making guardAuth return auth unwrapped (the loopback cases reach
// the servers and fail, and the off-machine cases are not run).
func TestEgressGuardsGitRemotes(t *testing.T) {
	root := t.TempDir()
	repo := gittest.NewRepo(t, filepath.Join(root, "app.git"))
	repo.Commit("one", map[string]string{"a.yaml": "a: 1\n"})
	web := newGitHTTPServer(t, root, "u", "p")
	sshd := newGitSSHServer(t, root)
	webPort := web.URL[strings.LastIndex(web.URL, ":")+1:]
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	sshAuth := &Auth{SSHPrivateKey: sshd.ClientKey, KnownHosts: sshd.KnownHosts}
	tests := []struct {
		name   string
		url    string
		auth   *Auth
		allow  []netip.Prefix
		denied string // substring of the error; "" when the fetch must work
		dialed string // host the recorder must have seen, when allowed
		// offMachine cases name addresses off this machine: they run only
		// after the allowed cases proved Git traffic goes through the
		// Dialer (whose recorder opens nothing off this machine), so a
		// broken wiring can never send a request or a lookup there.
		offMachine bool
	}{
		{name: "https on loopback allowed", url: web.URL + "/app.git", auth: web.auth(), allow: loopback, dialed: "127.0.0.1"},
		{name: "ssh on loopback allowed", url: sshd.url("app.git"), auth: sshAuth, allow: loopback, dialed: "127.0.0.1"},
		{name: "https on loopback", url: web.URL + "/app.git", auth: web.auth(), denied: "127.0.0.1 is a loopback address"},
		{name: "ssh on loopback", url: sshd.url("app.git"), auth: sshAuth, denied: "127.0.0.1 is a loopback address"},
		{name: "name resolving to loopback", offMachine: true, url: "https://git.example.test:" + webPort + "/app.git", auth: web.auth(), denied: "git.example.test (resolves to 127.0.0.1) is a loopback address"},
		{name: "cloud metadata", offMachine: true, url: "http://169.254.169.254/repo.git", denied: "169.254.169.254 is a cloud metadata address"},
		{name: "name resolving to metadata", offMachine: true, url: "http://metadata.example.test/repo.git", denied: "metadata.example.test (resolves to 169.254.169.254)"},
		{name: "ssh to link-local", offMachine: true, url: "ssh://git@169.254.10.10/repo.git", auth: sshAuth, denied: "169.254.10.10 is a link-local address"},
		{name: "git protocol cannot be guarded", offMachine: true, url: "git://127.0.0.1:1/repo.git", denied: "scheme git:// cannot be restricted"},
	}
	wired := true
	for _, tc := range tests {
		if tc.offMachine && !wired {
			t.Fatalf("Git traffic does not go through the Dialer; not trying %s", tc.url)
		}
		t.Run(tc.name, func(t *testing.T) {
			web.ResetCounts()
			sshd.uploads.Store(0)
			rec := &dialRecorder{}
			d := &egress.Dialer{
				Policy:   egress.Policy{Allow: tc.allow},
				Resolver: names{"git.example.test": "127.0.0.1", "metadata.example.test": "169.254.169.254"},
				Dial:     rec.dial,
			}
			f := newTestFetcher(t)
			src := Source{URL: tc.url, Ref: Ref{Branch: "main"}, Auth: tc.auth, Egress: d}
			_, err := f.Resolve(context.Background(), src)
			if tc.denied == "" {
				if err != nil {
					t.Fatalf("Resolve: %v", err)
				}
				if !rec.dialed(tc.dialed) {
					wired = false
					t.Errorf("recorder saw %v, want a dial to %s", rec.addrs, tc.dialed)
				}
				return
			}
			if !errors.Is(err, ErrInvalidSource) || !strings.Contains(err.Error(), tc.denied) {
				t.Errorf("Resolve error = %v, want ErrInvalidSource containing %q", err, tc.denied)
			}
			if len(rec.addrs) != 0 {
				t.Errorf("recorder saw dials %v, want none", rec.addrs)
			}
			if n := web.ListRefs.Load() + sshd.uploads.Load(); n != 0 {
				t.Errorf("servers saw %d requests, want none", n)
			}
		})
	}
}

// TestEgressCoversRedirects: an allowed server that redirects the listing to
// a denied address does not get the agent there, because the check is made
// when connecting. The denied target is another loopback address with a
// real listener, so without the guard the request would arrive there (how
// this was checked: guardAuth returning auth unwrapped makes it arrive).
func TestEgressCoversRedirects(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no second loopback address: %v", err)
	}
	var reached atomic.Int64
	target := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Add(1)
		http.Error(w, "not a git server", http.StatusNotFound)
	}))
	target.Listener = ln
	target.Start()
	defer target.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	defer redirector.Close()

	rec := &dialRecorder{}
	d := &egress.Dialer{Policy: egress.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}, Dial: rec.dial}
	f := newTestFetcher(t)
	_, err = f.Resolve(context.Background(), Source{URL: redirector.URL + "/app.git", Ref: Ref{Branch: "main"}, Egress: d})
	if !errors.Is(err, ErrInvalidSource) || !strings.Contains(err.Error(), "127.0.0.2 is a loopback address") {
		t.Errorf("Resolve error = %v, want the redirect target refused", err)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("redirect target saw %d requests, want none", n)
	}
	if diff := cmp.Diff(true, rec.dialed("127.0.0.1")); diff != "" {
		t.Errorf("recorder saw %v, want the allowed server dialed (-want +got):\n%s", rec.addrs, diff)
	}
}

// TestIsLocal: file:// URLs and paths are local; remotes are not.
func TestIsLocal(t *testing.T) {
	for url, want := range map[string]bool{
		"file:///srv/git/app.git":          true,
		"/srv/git/app.git":                 true,
		"./app":                            true,
		"https://github.com/org/app.git":   false,
		"git@github.com:org/app.git":       false,
		"ssh://git@github.com/org/app.git": false,
	} {
		if got := (Source{URL: url}).IsLocal(); got != want {
			t.Errorf("IsLocal(%s) = %t, want %t", url, got, want)
		}
	}
}
