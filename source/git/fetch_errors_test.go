package git

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gittest"
)

// TestFetchErrorsSayWhatHappened: each first mistake a user makes with a
// source, against the real loopback Git servers, gets its own reason, is
// permanent or not as retrying can or cannot help, and says in one line
// what is wrong: which credentials were sent, which Secret keys were found
// and expected, what branches and tags exist, which URL has no repository.
// No message ends in a dangling colon or quotes a credential.
//
// Checked: with authFailure always answering AuthenticationFailed, the
// "no credentials" and "Secret keys user/pass" cases fail; with the
// listing left out of Resolve, "wrong branch" and "wrong tag" fail; with
// unreachable() answering false, "unreachable host" fails.
func TestFetchErrorsSayWhatHappened(t *testing.T) {
	tr := newTransports(t)
	repo := gittest.NewRepo(t, filepath.Join(tr.root, "app"))
	repo.Commit("one", map[string]string{"a.yaml": "a: 1\n"})
	repo.Git("branch", "dev")
	for _, tag := range []string{"v1.0.0", "v1.10.0", "v1.2.0", "latest"} {
		repo.Git("tag", tag)
	}
	gittest.NewRepo(t, filepath.Join(tr.root, "empty"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := ln.Addr().String()
	ln.Close() // nothing listens there any more

	const password = "hunter2-wrong-password"
	secretKeys := AuthFromSecret("Secret/team-a/git-auth", map[string][]byte{
		"user": []byte("alice"), "pass": []byte(password), SecretKeyCA: tr.http.CA,
	})
	main := Ref{Branch: "main"}
	https := tr.http.URL + "/app"
	tests := []struct {
		name      string
		src       Source
		reason    string
		permanent bool
		words     []string // the message must contain each
	}{
		{"no credentials", Source{URL: https, Ref: main, Auth: &Auth{CAData: tr.http.CA}},
			v1.ReasonAuthenticationRequired, true, []string{https, "none were sent", "HTTP 401"}},
		{"wrong password", Source{URL: https, Ref: main, Auth: &Auth{Username: "alice", Password: password, CAData: tr.http.CA}},
			v1.ReasonAuthenticationFailed, true, []string{"rejected the username and password", "HTTP 401"}},
		{"wrong password from a Secret", Source{URL: https, Ref: main, Auth: AuthFromSecret("Secret/team-a/git-auth",
			map[string][]byte{SecretKeyUsername: []byte("alice"), SecretKeyPassword: []byte(password), SecretKeyCA: tr.http.CA})},
			v1.ReasonAuthenticationFailed, true, []string{"rejected the username and password from Secret/team-a/git-auth"}},
		{"wrong bearer token", Source{URL: https, Ref: main, Auth: &Auth{BearerToken: password, CAData: tr.http.CA}},
			v1.ReasonAuthenticationFailed, true, []string{"rejected the bearer token"}},
		{"Secret keys user/pass", Source{URL: https, Ref: main, Auth: secretKeys},
			v1.ReasonCredentialsUnrecognized, true, []string{"Secret/team-a/git-auth", "ca.crt, pass, user", "username and password, or bearerToken"}},
		{"Secret keys user/pass, ssh URL", Source{URL: tr.ssh.url("app"), Ref: main, Auth: secretKeys},
			v1.ReasonCredentialsUnrecognized, true, []string{"Secret/team-a/git-auth", "ca.crt, pass, user", "identity"}},
		{"wrong ssh key", Source{URL: tr.ssh.url("app"), Ref: main, Auth: &Auth{SSHPrivateKey: newTestSSHKey(t), KnownHosts: tr.ssh.KnownHosts}},
			v1.ReasonAuthenticationFailed, true, []string{"rejected the ssh key"}},
		{"wrong branch", Source{URL: https, Ref: Ref{Branch: "mian"}, Auth: tr.http.auth()},
			v1.ReasonRefNotFound, true, []string{`branch "mian" not found`, "branches dev, main (default main)"}},
		{"wrong tag", Source{URL: https, Ref: Ref{Tag: "v2.0.0"}, Auth: tr.http.auth()},
			v1.ReasonRefNotFound, true, []string{`tag "v2.0.0" not found`, "tags v1.10.0, v1.2.0, v1.0.0, latest"}},
		{"semver range no tag satisfies", Source{URL: https, Ref: Ref{Semver: ">=3.0.0"}, Auth: tr.http.auth()},
			v1.ReasonRefNotFound, true, []string{`no tag satisfies semver range ">=3.0.0"`, "tags v1.10.0"}},
		{"empty repository", Source{URL: tr.http.URL + "/empty", Ref: main, Auth: tr.http.auth()},
			v1.ReasonRefNotFound, true, []string{"empty"}},
		{"wrong URL", Source{URL: tr.http.URL + "/nope", Ref: main, Auth: tr.http.auth()},
			v1.ReasonRepositoryNotFound, true, []string{tr.http.URL + "/nope: not found", "hides it from the credentials sent"}},
		{"wrong URL with credentials in it", Source{URL: strings.Replace(tr.http.URL, "https://", "https://alice:"+tr.http.pass+"@", 1) + "/nope",
			Ref: main, Auth: &Auth{CAData: tr.http.CA}},
			v1.ReasonRepositoryNotFound, true, []string{"https://***@127.0.0.1", "/nope: not found"}},
		{"wrong local path", Source{URL: "file://" + tr.root + "/nope", Ref: main},
			v1.ReasonRepositoryNotFound, true, []string{"no Git repository at this path"}},
		{"unreachable host", Source{URL: "https://" + deadAddr + "/app", Ref: main, Auth: tr.http.auth()},
			v1.ReasonHostUnreachable, false, []string{"host " + deadAddr + " unreachable", "connection refused"}},
	}
	f := newTestFetcher(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.Resolve(t.Context(), tc.src)
			if err == nil {
				t.Fatal("Resolve succeeded")
			}
			msg := err.Error()
			if got := Reason(err); got != tc.reason {
				t.Errorf("Reason = %q, want %q (error %q)", got, tc.reason, msg)
			}
			if got := IsPermanent(err); got != tc.permanent {
				t.Errorf("IsPermanent = %v, want %v", got, tc.permanent)
			}
			for _, w := range tc.words {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			if strings.Contains(msg, password) || strings.Contains(msg, tr.http.pass) {
				t.Errorf("error %q quotes a credential", msg)
			}
			if strings.HasSuffix(strings.TrimSpace(msg), ":") || strings.Contains(msg, "\n") || strings.Contains(msg, ": ;") {
				t.Errorf("error %q is not one complete line", msg)
			}
		})
	}
}

// TestRefNotFoundListsAtMostTen: a remote with many branches is listed by
// its first ten names and a count of the rest, not all of them.
func TestRefNotFoundListsAtMostTen(t *testing.T) {
	tr := newTransports(t)
	repo := gittest.NewRepo(t, filepath.Join(tr.root, "app"))
	repo.Commit("one", map[string]string{"a.yaml": "a: 1\n"})
	for i := range 14 {
		repo.Git("branch", fmt.Sprintf("feature-%02d", i))
	}
	_, err := newTestFetcher(t).Resolve(t.Context(), Source{URL: tr.http.URL + "/app", Ref: Ref{Branch: "nope"}, Auth: tr.http.auth()})
	if !errors.Is(err, ErrRefNotFound) {
		t.Fatalf("Resolve = %v, want ErrRefNotFound", err)
	}
	want := "the remote has branches feature-00, feature-01, feature-02, feature-03, feature-04, feature-05, " +
		"feature-06, feature-07, feature-08, feature-09 and 5 more (default main)"
	if !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error %q\ndoes not end with %q", err, want)
	}
}

// TestReasonOfOtherErrors: errors that are not fetch failures have no
// reason and are not permanent fetch failures.
func TestReasonOfOtherErrors(t *testing.T) {
	for _, err := range []error{nil, errors.New("boom"), fmt.Errorf("wrapped: %w", errors.New("x"))} {
		if got := Reason(err); got != "" {
			t.Errorf("Reason(%v) = %q, want empty", err, got)
		}
		if IsPermanent(err) {
			t.Errorf("IsPermanent(%v) = true", err)
		}
	}
	if !IsPermanent(fmt.Errorf("spec: %w", ErrInvalidSource)) {
		t.Error("IsPermanent(ErrInvalidSource) = false")
	}
}

// TestTransientFetchErrors: a server error and a server that does not
// answer in time are FetchFailed and not permanent (the agent retries them
// with backoff), and their messages are one line.
func TestTransientFetchErrors(t *testing.T) {
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
	}))
	t.Cleanup(unavailable.Close)
	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(silent.Close)
	t.Cleanup(func() { close(release) })

	opts := DefaultOptions()
	opts.Dir = t.TempDir()
	opts.Timeout = 300 * time.Millisecond // how long the silent server is waited for
	f, err := NewFetcher(opts)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ url, says string }{
		"HTTP 503":  {unavailable.URL + "/app", "list refs: the server answered HTTP 503 (maintenance)"},
		"no answer": {silent.URL + "/app", "list refs: timed out waiting for the server"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := f.Resolve(t.Context(), Source{URL: tc.url, Ref: Ref{Branch: "main"}})
			if err == nil {
				t.Fatal("Resolve succeeded")
			}
			if Reason(err) != v1.ReasonFetchFailed || IsPermanent(err) {
				t.Errorf("Reason = %q, IsPermanent = %v; want FetchFailed, false (error %q)", Reason(err), IsPermanent(err), err)
			}
			if msg := err.Error(); !strings.HasSuffix(msg, tc.says) {
				t.Errorf("error %q does not end with %q", msg, tc.says)
			}
			if tc.url == silent.URL+"/app" && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %q is not a context.DeadlineExceeded", err)
			}
		})
	}
}

func TestTidy(t *testing.T) {
	for in, want := range map[string]string{
		"repository not found: ":        "repository not found",
		"authentication required: x\n":  "authentication required: x",
		"first\nsecond:\n\n  third  \n": "first; second; third",
		"":                              "",
	} {
		if got := tidy(in); got != want {
			t.Errorf("tidy(%q) = %q, want %q", in, got, want)
		}
	}
}
