package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/internal/gittest"
)

// serveAppRepo serves, behind basic auth as user, a repository app.git
// whose branch main holds ConfigMap a in a.yaml, and returns the server's
// base URL.
func serveAppRepo(t *testing.T, user, password string) string {
	t.Helper()
	root := t.TempDir()
	repo := filepath.Join(root, "app.git")
	gittest.NewRepo(t, repo).Commit("a", map[string]string{"a.yaml": configMap("a", "k", "v")})
	return newGitHTTPServer(t, root, user, password)
}

// newGitHTTPServer serves the repositories under root on a loopback port
// (internal/gittest) and returns its base URL. With a user it requires
// basic auth.
func newGitHTTPServer(t *testing.T, root string, userPass ...string) string {
	t.Helper()
	var o gittest.Options
	if len(userPass) == 2 {
		o.User, o.Password = userPass[0], userPass[1]
	}
	return gittest.New(t, root, o).URL
}

// TestDiffURLOverHTTP reads a repository from a loopback Git HTTP server at a
// branch, a tag, a semver range and a commit, and reports a missing ref as an
// error (2).
func TestDiffURLOverHTTP(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	root := t.TempDir()
	repo := filepath.Join(root, "app.git")
	app := gittest.NewRepo(t, repo)
	app.Branch("trunk") // not "main": no ref flag follows the remote's HEAD
	first := app.Commit("v1", map[string]string{"deploy/a.yaml": configMap("a", "v", "1"), "README.md": "not a manifest\n"})
	app.Tag("v1.0.0")
	app.Commit("v2", map[string]string{"deploy/b.yaml": configMap("b", "v", "1")})
	url := newGitHTTPServer(t, root) + "/app.git"

	one := []string{"+ ConfigMap/" + ns + "/a (create)"}
	two := []string{"+ ConfigMap/" + ns + "/a (create)", "+ ConfigMap/" + ns + "/b (create)"}
	for name, tc := range map[string]struct {
		args []string
		want []string
	}{
		"default branch": {nil, two},
		"branch":         {[]string{"--branch", "trunk"}, two},
		"tag":            {[]string{"--tag", "v1.0.0"}, one},
		"semver":         {[]string{"--semver", "^1.0"}, one},
		"commit":         {[]string{"--commit", first}, one},
	} {
		t.Run(name, func(t *testing.T) {
			r := gitsyncIn(t, ns, append([]string{"diff", "--url", url, "--path", "deploy"}, tc.args...)...)
			wantCode(t, r, 1)
			if diff := cmp.Diff(tc.want, changeLines(r.stdout)); diff != "" {
				t.Errorf("(-want +got):\n%s\n%s", diff, r)
			}
		})
	}

	wantCode(t, gitsyncIn(t, ns, "apply", "--url", url, "--path", "deploy", "--name", "remote"), 0)
	wantCode(t, gitsyncIn(t, ns, "diff", "--url", url, "--path", "deploy", "--name", "remote"), 0)

	r := gitsyncIn(t, ns, "diff", "--url", url, "--branch", "nope")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "nope") {
		t.Errorf("missing branch: error does not name it:\n%s", r)
	}
}

// TestRenderErrorNamesFile: an invalid manifest in a kustomize-free
// directory and in a repository both fail with the file named.
func TestRenderErrorNamesFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"ok.yaml":          configMap("a", "k", "v"),
		"sub/invalid.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n",
	})
	for _, cmd := range []string{"diff", "apply"} {
		r := gitsync(t, cmd, dir, "--kubeconfig", env.Kubeconfig)
		wantCode(t, r, 2)
		if !strings.Contains(r.stderr, "sub/invalid.yaml") {
			t.Errorf("%s: error does not name sub/invalid.yaml:\n%s", cmd, r)
		}
	}
}

func TestSourceOptionsComplete(t *testing.T) {
	for name, tc := range map[string]struct {
		opts    sourceOptions
		args    []string
		wantErr string
	}{
		"dir":             {args: []string{"./deploy"}},
		"url":             {opts: sourceOptions{URL: "https://example.com/r", Tag: "v1"}},
		"neither":         {wantErr: "no source"},
		"both":            {opts: sourceOptions{URL: "https://example.com/r"}, args: []string{"."}, wantErr: "not both"},
		"two refs":        {opts: sourceOptions{URL: "https://example.com/r", Tag: "v1", Branch: "main"}, wantErr: "at most one"},
		"ref without url": {opts: sourceOptions{Commit: "abc"}, args: []string{"."}, wantErr: "need --url"},
		"two directories": {args: []string{"a", "b"}, wantErr: "at most one directory"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.opts.Complete(tc.args)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
			}
		})
	}
}

// TestDiffKustomizeOverlayInWorkTree: a local overlay whose base lies
// elsewhere in the same Git work tree renders, because the work tree's top is
// the confinement root, as it is for the agent.
func TestDiffKustomizeOverlayInWorkTree(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	repo := t.TempDir()
	gittest.NewRepo(t, repo).Write(map[string]string{
		"base/kustomization.yaml":          "resources:\n- app.yaml\n",
		"base/app.yaml":                    configMap("app", "env", "base"),
		"overlays/prod/kustomization.yaml": "resources:\n- ../../base\nnamePrefix: prod-\n",
	})
	r := gitsyncIn(t, ns, "diff", filepath.Join(repo, "overlays", "prod"))
	wantCode(t, r, 1)
	if diff := cmp.Diff([]string{"+ ConfigMap/" + ns + "/prod-app (create)"}, changeLines(r.stdout)); diff != "" {
		t.Errorf("(-want +got):\n%s\n%s", diff, r)
	}
}

// TestDiffURLWithCredentials: HTTPS-style basic auth comes from the
// environment, and the password appears in no output.
func TestDiffURLWithCredentials(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	root := t.TempDir()
	repo := filepath.Join(root, "private.git")
	gittest.NewRepo(t, repo).Commit("a", map[string]string{"a.yaml": configMap("a", "k", "v")})
	const password = "pa55-w0rd-never-printed"
	url := newGitHTTPServer(t, root, "alice", password) + "/private.git"

	r := gitsyncIn(t, ns, "diff", "--url", url)
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "authentication") {
		t.Errorf("without credentials: want an authentication error:\n%s", r)
	}

	r = gitsyncEnv(t, []string{gitEnvUsername + "=alice", gitEnvPassword + "=" + password},
		"diff", "--url", url, "--kubeconfig", env.Kubeconfig, "-n", ns)
	wantCode(t, r, 1)
	if diff := cmp.Diff([]string{"+ ConfigMap/" + ns + "/a (create)"}, changeLines(r.stdout)); diff != "" {
		t.Errorf("with credentials (-want +got):\n%s\n%s", diff, r)
	}

	r = gitsyncEnv(t, []string{gitEnvUsername + "=alice", gitEnvPassword + "=wrong-" + password},
		"diff", "--url", url, "--kubeconfig", env.Kubeconfig, "-n", ns)
	wantCode(t, r, 2)
	if strings.Contains(r.stdout+r.stderr, password) {
		t.Errorf("output leaks the password:\n%s", r)
	}
}
