package chartrepo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gitsync.dev/gitsync/internal/chartrepotest"
	"gitsync.dev/gitsync/internal/egress"
	"gitsync.dev/gitsync/source/chartrepo"
	"gitsync.dev/gitsync/source/helm"
)

// repos serves web 1.2.0, 1.2.3 and 1.3.0 over HTTP and cache 0.4.0 and
// 0.5.1 in a registry, all packaged (and pushed) by the real helm.
func repos(t *testing.T) (*chartrepotest.HTTPRepo, *chartrepotest.Registry) {
	t.Helper()
	web := chartrepotest.NewHTTPRepo(t)
	reg := chartrepotest.NewRegistry(t)
	for _, v := range []string{"1.2.0", "1.2.3", "1.3.0"} {
		dir := t.TempDir()
		chartrepotest.WriteTree(t, dir, chartrepotest.Leaf("web", v))
		web.Add(t, dir)
	}
	for _, v := range []string{"0.4.0", "0.5.1"} {
		dir := t.TempDir()
		chartrepotest.WriteTree(t, dir, chartrepotest.Leaf("cache", v))
		reg.Push(t, dir)
	}
	return web, reg
}

func newFetcher(t *testing.T, now func() time.Time) *chartrepo.Fetcher {
	t.Helper()
	f, err := chartrepo.New(chartrepo.Options{Dir: t.TempDir(), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestResolve: a locked need gets its version, an unlocked one the highest
// its constraint allows, from both kinds of repository; each archive is
// stored by the digest its repository lists; a second resolve within the
// TTL asks nothing, and after it only the index (or manifest and tag list)
// is asked again, never the archive.
func TestResolve(t *testing.T) {
	web, reg := repos(t)
	now := time.Unix(1000, 0)
	f := newFetcher(t, func() time.Time { return now })
	ctx := context.Background()
	needs := []helm.Need{
		{Name: "web", Repository: web.URL(), Version: "1.2.0", Locked: true},
		{Name: "web", Repository: web.URL(), Version: "~1.2.0"},
		{Name: "cache", Repository: reg.URL(), Version: ">=0.4.0 <1.0.0"},
		{Name: "cache", Repository: reg.URL(), Version: "0.4.0", Locked: true},
	}
	got, err := f.Resolve(ctx, needs, chartrepo.Access{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"web 1.2.0", "web 1.2.3", "cache 0.5.1", "cache 0.4.0"}
	for i, a := range got {
		if a.Name+" "+a.Version != want[i] {
			t.Errorf("need %d resolved to %s %s, want %s", i, a.Name, a.Version, want[i])
		}
		if _, err := os.Stat(a.File); err != nil {
			t.Errorf("%s %s not stored: %v", a.Name, a.Version, err)
		}
		if filepath.Base(a.File) != "sha256-"+a.Digest[len("sha256:"):]+".tgz" {
			t.Errorf("%s stored as %s, not by its digest %s", a.Name, a.File, a.Digest)
		}
	}
	webN, regN := web.Requests(), reg.Requests()
	if _, err := f.Resolve(ctx, needs, chartrepo.Access{}); err != nil {
		t.Fatal(err)
	}
	if web.Requests() != webN || reg.Requests() != regN {
		t.Errorf("a second resolve within the TTL sent %d HTTP and %d registry requests, want 0", web.Requests()-webN, reg.Requests()-regN)
	}
	now = now.Add(time.Hour)
	if _, err := f.Resolve(ctx, needs, chartrepo.Access{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(web.Paths()[webN:], reg.Paths()[regN:]...) {
		if filepath.Ext(p) == ".tgz" || filepath.Base(filepath.Dir(p)) == "blobs" {
			t.Errorf("after the TTL an archive was downloaded again: %s", p)
		}
	}
	if web.Requests() == webN {
		t.Error("after the TTL the index was not read again")
	}
}

// TestResolveCredentials: a repository that wants credentials and has
// none configured is an AuthError saying so; wrong ones are an AuthError
// too; right ones resolve. Credentials never appear in an error.
func TestResolveCredentials(t *testing.T) {
	web, reg := repos(t)
	web.RequireAuth("robot", "s3cret-password")
	reg.RequireAuth("robot", "s3cret-password")
	ctx := context.Background()
	for _, n := range []helm.Need{
		{Name: "web", Repository: web.URL(), Version: "1.2.0", Locked: true},
		{Name: "cache", Repository: reg.URL(), Version: "0.4.0", Locked: true},
	} {
		t.Run(n.Name, func(t *testing.T) {
			f := newFetcher(t, nil)
			_, err := f.Resolve(ctx, []helm.Need{n}, chartrepo.Access{})
			var ae *chartrepo.AuthError
			if !errors.As(err, &ae) || !ae.Anonymous || ae.Status != 401 {
				t.Fatalf("without credentials: %v, want an AuthError (401, none configured)", err)
			}
			wrong := chartrepo.Access{Repositories: []chartrepo.Repository{{URL: n.Repository, Username: "robot", Password: "wrong-password"}}}
			_, err = f.Resolve(ctx, []helm.Need{n}, wrong)
			if !errors.As(err, &ae) || ae.Anonymous {
				t.Fatalf("with wrong credentials: %v, want an AuthError (refused)", err)
			}
			if s := err.Error(); strings.Contains(s, "wrong-password") {
				t.Errorf("error shows the password: %s", s)
			}
			right := chartrepo.Access{Repositories: []chartrepo.Repository{{URL: n.Repository, Username: "robot", Password: "s3cret-password"}}}
			if _, err := f.Resolve(ctx, []helm.Need{n}, right); err != nil {
				t.Fatalf("with the credentials: %v", err)
			}
			// Stored now; anonymous is still refused: the repository is asked
			// with each caller's own credentials.
			if _, err := f.Resolve(ctx, []helm.Need{n}, chartrepo.Access{}); !errors.As(err, &ae) {
				t.Fatalf("anonymous after a download with credentials: %v, want an AuthError", err)
			}
		})
	}
}

// TestResolveCaps: an index or chart over its cap is refused while read.
func TestResolveCaps(t *testing.T) {
	web, reg := repos(t)
	ctx := context.Background()
	small, err := chartrepo.New(chartrepo.Options{Dir: t.TempDir(), MaxIndexBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	var tl *chartrepo.TooLargeError
	if _, err := small.Resolve(ctx, []helm.Need{{Name: "web", Repository: web.URL(), Version: "1.2.0"}}, chartrepo.Access{}); !errors.As(err, &tl) {
		t.Errorf("index over the cap: %v, want a TooLargeError", err)
	}
	tiny, err := chartrepo.New(chartrepo.Options{Dir: t.TempDir(), MaxChartBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []helm.Need{{Name: "web", Repository: web.URL(), Version: "1.2.0"}, {Name: "cache", Repository: reg.URL(), Version: "0.4.0"}} {
		if _, err := tiny.Resolve(ctx, []helm.Need{n}, chartrepo.Access{}); !errors.As(err, &tl) {
			t.Errorf("%s over the chart cap: %v, want a TooLargeError", n.Name, err)
		}
	}
}

// TestResolveThroughEgress: with the agent's guard, a repository on
// loopback is refused before any request reaches it, unless the operator
// allowed loopback.
func TestResolveThroughEgress(t *testing.T) {
	web, reg := repos(t)
	ctx := context.Background()
	guarded, err := chartrepo.New(chartrepo.Options{Dir: t.TempDir(), Egress: &egress.Dialer{}})
	if err != nil {
		t.Fatal(err)
	}
	webN, regN := web.Requests(), reg.Requests()
	for _, n := range []helm.Need{{Name: "web", Repository: web.URL(), Version: "1.2.0"}, {Name: "cache", Repository: reg.URL(), Version: "0.4.0"}} {
		var de *egress.DeniedError
		if _, err := guarded.Resolve(ctx, []helm.Need{n}, chartrepo.Access{}); !errors.As(err, &de) {
			t.Errorf("%s on loopback: %v, want a DeniedError", n.Name, err)
		}
	}
	if web.Requests() != webN || reg.Requests() != regN {
		t.Errorf("refused repositories got %d and %d requests", web.Requests()-webN, reg.Requests()-regN)
	}
	allow, err := egress.ParsePrefixes("127.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	allowed, err := chartrepo.New(chartrepo.Options{Dir: t.TempDir(), Egress: &egress.Dialer{Policy: egress.Policy{Allow: allow}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := allowed.Resolve(ctx, []helm.Need{{Name: "web", Repository: web.URL(), Version: "1.2.0"}, {Name: "cache", Repository: reg.URL(), Version: "0.4.0"}}, chartrepo.Access{}); err != nil {
		t.Errorf("with loopback allowed: %v", err)
	}
}
