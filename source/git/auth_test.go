package git

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"gitsync.dev/gitsync/internal/gittest"
)

func TestAuthFailuresAreClassifiedAndRedacted(t *testing.T) {
	tr := newTransports(t)
	repo := gittest.NewRepo(t, filepath.Join(tr.root, "app"))
	repo.Commit("one", map[string]string{"a.yaml": "a: 1\n"})
	main := Ref{Branch: "main"}
	host := strings.TrimPrefix(tr.http.URL, "https://")

	otherKey := newTestSSHKey(t)
	_, otherHost, _ := ed25519.GenerateKey(rand.Reader)
	otherHostPub, _ := ssh.NewPublicKey(otherHost.Public())
	wrongKnownHosts := []byte(knownhosts.Line([]string{tr.ssh.Addr}, otherHostPub) + "\n")

	const secret = "hunter2-wrong-password"
	tests := []struct {
		name    string
		src     Source
		class   error
		secrets []string // must not appear in the message
	}{
		{"https wrong password", Source{URL: tr.http.URL + "/app", Ref: main,
			Auth: &Auth{Username: "alice", Password: secret, CAData: tr.http.CA}}, errAuthFailed, []string{secret}},
		{"https wrong password in url", Source{URL: "https://alice:" + secret + "@" + host + "/app", Ref: main,
			Auth: &Auth{CAData: tr.http.CA}}, errAuthFailed, []string{secret}},
		{"https bearer token refused", Source{URL: tr.http.URL + "/app", Ref: main,
			Auth: &Auth{BearerToken: "tok-" + secret, CAData: tr.http.CA}}, errAuthFailed, []string{"tok-" + secret}},
		{"https anonymous", Source{URL: tr.http.URL + "/app", Ref: main,
			Auth: &Auth{CAData: tr.http.CA}}, errAuthFailed, nil},
		{"https untrusted CA", Source{URL: tr.http.URL + "/app", Ref: main,
			Auth: &Auth{Username: "alice", Password: secret}}, nil, []string{secret}},
		{"ssh unknown key", Source{URL: tr.ssh.url("app"), Ref: main,
			Auth: &Auth{SSHPrivateKey: otherKey, KnownHosts: tr.ssh.KnownHosts}}, errAuthFailed, nil},
		{"ssh host key mismatch", Source{URL: tr.ssh.url("app"), Ref: main,
			Auth: &Auth{SSHPrivateKey: tr.ssh.ClientKey, KnownHosts: wrongKnownHosts}}, errHostKey, nil},
		{"ssh without known_hosts is refused", Source{URL: tr.ssh.url("app"), Ref: main,
			Auth: &Auth{SSHPrivateKey: tr.ssh.ClientKey}}, ErrInvalidSource, nil},
		{"ssh without key", Source{URL: tr.ssh.url("app"), Ref: main,
			Auth: &Auth{KnownHosts: tr.ssh.KnownHosts}}, ErrInvalidSource, nil},
		{"ssh garbage key", Source{URL: tr.ssh.url("app"), Ref: main,
			Auth: &Auth{SSHPrivateKey: []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n" + secret), KnownHosts: tr.ssh.KnownHosts}},
			ErrInvalidSource, []string{secret}},
	}
	f := newTestFetcher(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.Resolve(t.Context(), tc.src)
			if err == nil {
				t.Fatal("Resolve succeeded, want an error")
			}
			if tc.class != nil && !errors.Is(err, tc.class) {
				t.Errorf("Resolve error %q is not %v", err, tc.class)
			}
			t.Logf("error: %v", err)
			var ge *Error
			if !errors.As(err, &ge) {
				t.Errorf("Resolve error %T is not an *Error", err)
			}
			for _, s := range tc.secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error leaks a credential: %q", err)
				}
			}
			// The same source through Fetch must fail the same way.
			_, err = f.Fetch(t.Context(), tc.src, Revision{Ref: "main", Commit: repo.Head()})
			if tc.class != nil && !errors.Is(err, tc.class) {
				t.Errorf("Fetch error %q is not %v", err, tc.class)
			}
			for _, s := range tc.secrets {
				if err != nil && strings.Contains(err.Error(), s) {
					t.Errorf("Fetch error leaks a credential: %q", err)
				}
			}
		})
	}
}

func TestAuthInsecureSkipHostKeyCheck(t *testing.T) {
	tr := newTransports(t)
	repo := gittest.NewRepo(t, filepath.Join(tr.root, "app"))
	head := repo.Commit("one", map[string]string{"a.yaml": "a: 1\n"})
	f := newTestFetcher(t)
	src := Source{URL: tr.ssh.url("app"), Ref: Ref{Branch: "main"},
		Auth: &Auth{SSHPrivateKey: tr.ssh.ClientKey, InsecureSkipHostKeyCheck: true}}
	rev, err := f.Resolve(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	if rev.Commit != head {
		t.Errorf("Resolve = %s, want %s", rev.Commit, head)
	}
}

func newTestSSHKey(t testing.TB) []byte {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block)
}
