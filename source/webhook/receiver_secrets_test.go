package webhook

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// countingProvider counts the signature checks of the provider it wraps.
type countingProvider struct {
	webhookProvider
	checks *atomic.Int64
}

func (c countingProvider) Verify(h http.Header, body, secret []byte) bool {
	c.checks.Add(1)
	return c.webhookProvider.Verify(h, body, secret)
}

// monorepoSources returns n sources of one repository on branch main, the
// i-th signed with secretOf(i).
func monorepoSources(n int, secretOf func(i int) []byte) []testSource {
	out := make([]testSource, n)
	for i := range out {
		out[i] = testSource{fmt.Sprintf("ns/app-%03d", i), "https://git.example.com/org/mono", "main", secretOf(i)}
	}
	return out
}

// newCountingReceiver returns a receiver over sources whose GitHub
// signature checks are counted in checks.
func newCountingReceiver(tb testing.TB, sources []testSource, enqueue func(string), observe func(Delivery)) (*Receiver, *atomic.Int64) {
	tb.Helper()
	opts := DefaultOptions()
	opts.Lookup = lookupIndex(sources)
	opts.Enqueue = enqueue
	opts.Observe = observe
	opts.Clock = clocktesting.NewFakePassiveClock(testNow)
	rcv, err := NewReceiver(opts)
	if err != nil {
		tb.Fatal(err)
	}
	checks := &atomic.Int64{}
	rcv.providers["/hook/github"] = countingProvider{rcv.providers["/hook/github"], checks}
	return rcv, checks
}

var monoPush = []byte(`{"ref":"refs/heads/main","after":"1","repository":{"clone_url":"https://git.example.com/org/mono.git"}}`)

// TestReceiverOneCheckPerSecret: a delivery to a repository followed by
// many sources costs one signature check per distinct secret, not per
// source, however it is signed; a wrong signature still reports every
// source of the repository as rejected.
//
// Checked by verifying against each target's secret again (the code
// before grouping): 50 checks instead of 1.
func TestReceiverOneCheckPerSecret(t *testing.T) {
	shared := func(int) []byte { return []byte("one secret for all") }
	fiveSecrets := func(i int) []byte { return []byte(fmt.Sprintf("secret %d", i%5)) }
	tests := []struct {
		name     string
		secretOf func(int) []byte
		signWith []byte
		checks   int64
		enqueued int
	}{
		{"50 sources, one secret, wrong signature", shared, []byte("guess"), 1, 0},
		{"50 sources, one secret, right signature", shared, []byte("one secret for all"), 1, 50},
		{"50 sources, five secrets, wrong signature", fiveSecrets, []byte("guess"), 5, 0},
		{"50 sources, five secrets, signed with one", fiveSecrets, []byte("secret 3"), 5, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			obs := &observed{}
			rcv, checks := newCountingReceiver(t, monorepoSources(50, tt.secretOf), rec.Enqueue, obs.Observe)
			srv := httptest.NewServer(rcv)
			defer srv.Close()
			if code, _ := post(t, srv.URL+"/hook/github", githubHeaders("push", monoPush, tt.signWith), bytes.NewReader(monoPush)); code != 202 {
				t.Fatalf("push answered %d", code)
			}
			if got := checks.Load(); got != tt.checks {
				t.Errorf("signature checks = %d, want %d", got, tt.checks)
			}
			if got := len(rec.Keys()); got != tt.enqueued {
				t.Errorf("enqueued %d sources, want %d", got, tt.enqueued)
			}
			if tt.enqueued == 0 {
				ds := obs.All()
				if len(ds) != 1 || ds[0].Result != ResultBadSignature || len(ds[0].Rejected) != 50 {
					t.Errorf("observed %+v, want one bad_signature rejecting all 50 sources", ds)
				}
			}
		})
	}
}

// TestReceiverEnqueuesOnlyTheSigningSecretsGroup: two groups of sources of
// one repository with different secrets; a delivery signed with A wakes
// only A's sources (on the pushed branch), one signed with B only B's.
//
// The per-source code enqueued the same keys (it failed here only on the
// count of checks, 5 instead of 2); the test keeps grouping from waking a
// group whose secret did not sign.
func TestReceiverEnqueuesOnlyTheSigningSecretsGroup(t *testing.T) {
	a, b := []byte("secret A"), []byte("secret B")
	sources := []testSource{
		{"ns/a-1", "https://git.example.com/org/mono", "main", a},
		{"ns/b-1", "https://git.example.com/org/mono", "main", b},
		{"ns/a-2", "git@git.example.com:org/mono.git", "", a},
		{"ns/a-dev", "https://git.example.com/org/mono", "dev", a},
		{"ns/b-2", "https://git.example.com/org/mono.git", "main", b},
	}
	tests := []struct {
		name   string
		secret []byte
		want   []string
	}{
		{"signed with A", a, []string{"ns/a-1", "ns/a-2"}},
		{"signed with B", b, []string{"ns/b-1", "ns/b-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			rcv, checks := newCountingReceiver(t, sources, rec.Enqueue, nil)
			srv := httptest.NewServer(rcv)
			defer srv.Close()
			if code, _ := post(t, srv.URL+"/hook/github", githubHeaders("push", monoPush, tt.secret), bytes.NewReader(monoPush)); code != 202 {
				t.Fatalf("push answered %d", code)
			}
			if diff := cmp.Diff(tt.want, rec.Keys()); diff != "" {
				t.Errorf("enqueued (-want +got):\n%s", diff)
			}
			if got := checks.Load(); got != 2 {
				t.Errorf("signature checks = %d, want 2 (one per secret)", got)
			}
		})
	}
}

// BenchmarkRejectedDelivery measures what one wrongly signed delivery to a
// repository with 500 sources costs the receiver: with one secret shared by
// all of them, and with a secret each.
func BenchmarkRejectedDelivery(b *testing.B) {
	for _, bc := range []struct {
		name     string
		secretOf func(int) []byte
	}{
		{"500-sources-1-secret", func(int) []byte { return []byte("one secret for all") }},
		{"500-sources-500-secrets", func(i int) []byte { return []byte(fmt.Sprintf("secret %d", i)) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rcv, _ := newCountingReceiver(b, monorepoSources(500, bc.secretOf), func(string) { b.Fatal("enqueued a wrongly signed delivery") }, nil)
			h := githubHeaders("push", monoPush, []byte("guess"))
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/hook/github", bytes.NewReader(monoPush))
				req.Header = h.Clone()
				w := httptest.NewRecorder()
				rcv.ServeHTTP(w, req)
				if w.Code != http.StatusAccepted {
					b.Fatalf("answered %d", w.Code)
				}
			}
		})
	}
}
