package git

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"gitsync.dev/gitsync/internal/egress"
	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/source/git/githubapp"
)

// A Secret holding a GitHub App fetches from a Git server that lets in
// only x-access-token with the token the stand-in API minted last; the
// API call and the fetch both dial through the egress guard. When the
// token has less than 5 minutes left a new one is minted and used (the
// server then refuses the old one).
func TestGitHubAppTokenFetches(t *testing.T) {
	root := t.TempDir()
	repo := gittest.NewRepo(t, filepath.Join(root, "team", "app.git"))
	first := repo.Commit("one", map[string]string{"a.yaml": "v: 1\n"})
	srv := gittest.New(t, root, gittest.Options{User: GitHubAppUser, Password: "no token minted yet"})
	clk := clocktesting.NewFakePassiveClock(time.Now())
	gh := gittest.NewGitHubApp(t, gittest.GitHubAppOptions{Repos: []string{"team/app"}, TokenTTL: 30 * time.Minute, Now: clk.Now, OnToken: srv.SetPassword})

	var dials atomic.Int64
	guard := &egress.Dialer{
		Policy: egress.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}
	tokens, err := githubapp.New(githubapp.Options{Client: &http.Client{Transport: &http.Transport{DialContext: guard.DialContext}}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	f := newTestFetcher(t)
	sync := func() (Revision, string) {
		t.Helper()
		src := Source{URL: srv.URL + "/team/app.git", Ref: Ref{Branch: "main"}, Egress: guard,
			Auth: AuthFromSecret("Secret/ns/app", gh.Secret(false))}
		tok, err := src.Auth.UseGitHubApp(t.Context(), tokens, src.URL)
		if err != nil {
			t.Fatal(err)
		}
		rev, err := f.Resolve(t.Context(), src)
		if err != nil {
			t.Fatalf("Resolve: %v", err)
		}
		if _, err := f.Fetch(t.Context(), src, rev); err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		return rev, tok
	}
	rev, tok := sync()
	if rev.Commit != first || tok != gh.Token() || gh.Mints() != 1 || gh.Lookups() != 1 {
		t.Fatalf("got %s, token is the minted one %v, mints %d, lookups %d", rev.Commit, tok == gh.Token(), gh.Mints(), gh.Lookups())
	}
	if dials.Load() < 2 {
		t.Fatalf("%d dials went through the egress guard; want the API's and Git's", dials.Load())
	}

	second := repo.Commit("two", map[string]string{"a.yaml": "v: 2\n"})
	clk.SetTime(clk.Now().Add(26 * time.Minute)) // 4 minutes left
	rev, fresh := sync()
	if rev.Commit != second || fresh == tok || gh.Mints() != 2 || gh.Lookups() != 1 {
		t.Fatalf("after 26m: got %s, new token %v, mints %d, lookups %d; want a refreshed token and no second lookup",
			rev.Commit, fresh != tok, gh.Mints(), gh.Lookups())
	}
}

// A GitHub App needs an HTTPS URL naming OWNER/REPO, and its private key.
func TestGitHubAppRefusesWhatCannotWork(t *testing.T) {
	tokens, err := githubapp.New(githubapp.Options{Client: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	data := map[string][]byte{githubapp.SecretKeyAppID: []byte("1"), githubapp.SecretKeyPrivateKey: []byte("x")}
	for _, tc := range []struct{ name, url, want string }{
		{"ssh", "git@github.com:team/app.git", "authenticates Git over HTTPS"},
		{"no owner", "https://github.com/app.git", "does not name OWNER/REPO"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := AuthFromSecret("Secret/ns/app", data).UseGitHubApp(t.Context(), tokens, tc.url)
			if !errors.Is(err, ErrInvalidSource) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want ErrInvalidSource saying %q", err, tc.want)
			}
		})
	}
	delete(data, githubapp.SecretKeyPrivateKey)
	_, err = AuthFromSecret("Secret/ns/app", data).UseGitHubApp(t.Context(), tokens, "https://github.com/team/app")
	if !errors.Is(err, ErrInvalidSource) || !strings.Contains(err.Error(), "Secret/ns/app names GitHub App 1 but has no githubAppPrivateKey") {
		t.Fatalf("err = %v", err)
	}
}
