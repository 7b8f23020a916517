package githubapp_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/source/git/githubapp"
)

func newTokens(t *testing.T, clk *clocktesting.FakePassiveClock) *githubapp.Tokens {
	t.Helper()
	tokens, err := githubapp.New(githubapp.Options{Client: &http.Client{}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return tokens
}

func appOf(gh *gittest.GitHubApp, installation bool) githubapp.App {
	app, _ := githubapp.FromSecret(gh.Secret(installation))
	return *app
}

// A token is minted once and served from the cache while more than 5
// minutes of it remain; then a new one is minted. The stand-in checks each
// JWT's signature, iss, iat and exp against the same clock.
func TestTokenCachedThenRefreshedBeforeExpiry(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	gh := gittest.NewGitHubApp(t, gittest.GitHubAppOptions{TokenTTL: 10 * time.Minute, Now: clk.Now})
	tokens := newTokens(t, clk)
	ctx := context.Background()

	first, err := tokens.Token(ctx, appOf(gh, true), "team/app")
	if err != nil {
		t.Fatal(err)
	}
	if first.Value != gh.Token() || gh.Mints() != 1 {
		t.Fatalf("first token %q, stand-in minted %d (last %q)", first.Value, gh.Mints(), gh.Token())
	}
	clk.SetTime(clk.Now().Add(4 * time.Minute)) // 6 minutes left: cached
	again, err := tokens.Token(ctx, appOf(gh, true), "other/repo")
	if err != nil || again != first || gh.Mints() != 1 {
		t.Fatalf("at +4m got %v (err %v), mints %d; want the cached token", again.Value == first.Value, err, gh.Mints())
	}
	clk.SetTime(clk.Now().Add(2 * time.Minute)) // 4 minutes left: refreshed
	fresh, err := tokens.Token(ctx, appOf(gh, true), "team/app")
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Value == first.Value || gh.Mints() != 2 || fresh.Value != gh.Token() {
		t.Fatalf("at +6m: mints %d, fresh is new %v; want a second token", gh.Mints(), fresh.Value != first.Value)
	}
}

// Without an installation id the installation is looked up for the
// repository once, then remembered; a repository the app is not
// installed on is an error naming it.
func TestInstallationLookedUp(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	gh := gittest.NewGitHubApp(t, gittest.GitHubAppOptions{Repos: []string{"team/app"}, Now: clk.Now})
	tokens := newTokens(t, clk)
	ctx := context.Background()
	for range 2 {
		if _, err := tokens.Token(ctx, appOf(gh, false), "team/app"); err != nil {
			t.Fatal(err)
		}
	}
	if gh.Lookups() != 1 || gh.Mints() != 1 {
		t.Fatalf("lookups %d, mints %d; want 1 and 1", gh.Lookups(), gh.Mints())
	}
	_, err := tokens.Token(ctx, appOf(gh, false), "team/elsewhere")
	var e *githubapp.Error
	if !errors.As(err, &e) || e.Code != http.StatusNotFound || !e.Permanent() ||
		!strings.Contains(err.Error(), "not installed on team/elsewhere") {
		t.Fatalf("err = %v; want a permanent 404 saying the app is not installed on team/elsewhere", err)
	}
}

// A key that is not the app's gets GitHub's 401 and its message; a key
// that does not parse is refused before any request. Neither error holds
// key material.
func TestWrongKeyErrors(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	gh := gittest.NewGitHubApp(t, gittest.GitHubAppOptions{Now: clk.Now})
	tokens := newTokens(t, clk)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	otherPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(other)})
	for _, tc := range []struct {
		name, want string
		key        []byte
		code       int
	}{
		{"another key", "HTTP 401: A JSON web token could not be decoded; GitHub refused the app's JWT", otherPEM, 401},
		{"not a key", "githubAppPrivateKey is unusable: it holds no PEM block", []byte("ghp_notakeyatall"), 0},
		{"a certificate", `its PEM block is "CERTIFICATE"`, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("x")}), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := appOf(gh, true)
			app.PrivateKey = tc.key
			_, err := tokens.Token(context.Background(), app, "team/app")
			var e *githubapp.Error
			if !errors.As(err, &e) || e.Code != tc.code || !e.Permanent() || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want a permanent error with code %d containing %q", err, tc.code, tc.want)
			}
			lines := strings.Split(string(tc.key), "\n")
			if strings.Contains(err.Error(), lines[min(1, len(lines)-1)]) {
				t.Fatalf("error carries key material: %v", err)
			}
		})
	}
	if gh.Mints() != 0 {
		t.Fatalf("minted %d tokens with wrong keys", gh.Mints())
	}
}
