package controller_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// dialRecorder stands in for the network under the agent's egress dialer:
// it records every address the dialer chose and opens nothing, so no test
// sends traffic off this machine even with the policy's checks removed.
type dialRecorder struct {
	mu    sync.Mutex
	addrs []string
}

func (r *dialRecorder) dial(_ context.Context, _, addr string) (net.Conn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addrs = append(r.addrs, addr)
	return nil, errors.New("dial recorder: no connection opened")
}

func (r *dialRecorder) dialed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.addrs...)
}

// nameTable resolves from a map, so no lookup leaves the machine.
type nameTable map[string]string

func (n nameTable) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := n[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// TestSourceURLsRefused: with the agent's defaults a GitSync naming a cloud
// metadata address, a name resolving to loopback, or a repository on the
// agent's disk is Stalled (InvalidSpec) with the host and the flag that
// would allow it named, and the dialer never tried those addresses. How
// this was checked: with Policy.Check accepting everything, the recorder
// sees the dials (it opens nothing) and the messages lack the refusal; with
// guardAuth returning the auth unwrapped, the loopback case fails and the
// off-machine cases are not tried; with the IsLocal check removed from
// sourceOf the file:// GitSync becomes Ready.
func TestSourceURLsRefused(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	rec := &dialRecorder{}
	startAgent(t, agentOptions{namespace: ns, strictEgress: true, dial: rec.dial,
		resolver: nameTable{"git.example.test": "127.0.0.1"}})
	local := newRepo(t)
	local.commit(map[string]string{"deploy/a.yaml": configMap("local", "git")})
	tests := []struct {
		name, url string
		words     []string
		// offMachine cases name addresses (or names) off this machine:
		// they run only after the loopback case proved that Git traffic
		// goes through the recorder, so a broken wiring never reaches them.
		offMachine bool
	}{
		{name: "loopback", url: "http://127.0.0.1:1/repo.git",
			words: []string{"127.0.0.1 is a loopback address", "--allow-networks 127.0.0.1/32"}},
		{name: "metadata", offMachine: true, url: "http://169.254.169.254/repo.git",
			words: []string{"169.254.169.254 is a cloud metadata address", "--allow-networks 169.254.169.254/32"}},
		{name: "loopback-name", offMachine: true, url: "https://user:hunter2@git.example.test/org/repo.git",
			words: []string{"https://***@git.example.test/org/repo.git", "git.example.test (resolves to 127.0.0.1) is a loopback address", "--allow-networks"}},
		{name: "file", url: local.url(), words: []string{local.url(), "--allow-local-sources"}},
		{name: "path", url: local.dir, words: []string{"--allow-local-sources"}},
	}
	for _, tc := range tests {
		if tc.offMachine && t.Failed() {
			t.Fatalf("the loopback case failed; not trying %s", tc.url)
		}
		t.Run(tc.name, func(t *testing.T) {
			gs := newGitSync(ns, tc.name, tc.url)
			if err := c.Create(context.Background(), gs); err != nil {
				t.Fatal(err)
			}
			got := waitStalledNaming(t, c, client.ObjectKeyFromObject(gs), tc.words...)
			for _, cond := range got.Status.Conditions {
				if strings.Contains(cond.Message, "hunter2") {
					t.Errorf("condition %s quotes the URL's password: %s", cond.Type, cond.Message)
				}
			}
		})
	}
	if got := rec.dialed(); len(got) != 0 {
		t.Errorf("dialer tried %v, want no address", got)
	}
}

// TestLocalSourcesAllowed: --allow-local-sources (and nothing else) lets a
// file:// GitSync sync.
func TestLocalSourcesAllowed(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns, strictEgress: true, allowLocalSources: true, dial: (&dialRecorder{}).dial})
	r := newRepo(t)
	r.commit(map[string]string{"deploy/a.yaml": configMap("local", "git")})
	gs := newGitSync(ns, "local", r.url())
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, client.ObjectKeyFromObject(gs), v1.ConditionReady, metav1.ConditionTrue, nil)
}
