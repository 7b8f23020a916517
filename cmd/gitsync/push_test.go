package main

import (
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"gitsync.dev/gitsync/internal/ocitest"
)

// ociRegistry serves an in-process OCI registry on loopback and returns
// its host:port.
func ociRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestPushArtifactThenBuildIt(t *testing.T) {
	t.Parallel()
	host := ociRegistry(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"base/cm.yaml":            configMap("app", "k", "base"),
		"base/kustomization.yaml": "resources: [cm.yaml]\n",
		"prod/kustomization.yaml": "resources: [../base]\nnamePrefix: prod-\n",
		"prod/extra.yaml":         configMap("unlisted", "k", "v"),
	})
	want := gitsync(t, "build", dir+"/prod")
	wantCode(t, want, 0)

	for _, tag := range []string{"v1.0.0", "v1.1.0"} {
		r := gitsync(t, "push", "artifact", dir, "oci://"+host+"/team/app:"+tag, "--plain-http", "--source", "https://git.example/app")
		wantCode(t, r, 0)
		if !strings.HasPrefix(r.stdout, "pushed oci://"+host+"/team/app:"+tag+"@sha256:") {
			t.Errorf("push printed %q", r.stdout)
		}
	}
	for _, args := range [][]string{
		{"--url", "oci://" + host + "/team/app:v1.0.0"},
		{"--url", "oci://" + host + "/team/app", "--semver", "~1"},
		{"--url", "oci://" + host + "/team/app", "--tag", "v1.1.0"},
	} {
		got := gitsync(t, append([]string{"build", "--path", "prod", "--plain-http"}, args...)...)
		wantCode(t, got, 0)
		if got.stdout != want.stdout {
			t.Errorf("build %v:\n%s\nwant what build of the directory prints:\n%s", args, got.stdout, want.stdout)
		}
	}

	refused := gitsync(t, "build", "--url", "oci://"+host+"/team/app:v1.0.0")
	wantCode(t, refused, exitError)
	if !strings.Contains(refused.stderr, "plain HTTP to a registry is refused") {
		t.Errorf("a registry over http without --plain-http:\n%s", refused)
	}
	noTag := gitsync(t, "push", "artifact", dir, "oci://"+host+"/team/app", "--plain-http")
	wantCode(t, noTag, exitError)
	if !strings.Contains(noTag.stderr, "name the tag to push") {
		t.Errorf("push without a tag:\n%s", noTag)
	}
	gitFlag := gitsync(t, "build", "--url", "oci://"+host+"/team/app", "--branch", "main", "--plain-http")
	wantCode(t, gitFlag, exitError)
	if !strings.Contains(gitFlag.stderr, "--branch and --commit select Git revisions") {
		t.Errorf("--branch with an oci:// url:\n%s", gitFlag)
	}
}

func TestCosignSignedArtifactOnly(t *testing.T) {
	t.Parallel()
	host := ociRegistry(t)
	keys, other := t.TempDir(), t.TempDir()
	ocitest.Cosign(t, keys, "generate-key-pair")
	ocitest.Cosign(t, other, "generate-key-pair")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"cm.yaml": configMap("app", "k", "v1")})
	want := gitsync(t, "build", dir)
	wantCode(t, want, 0)

	repo := "oci://" + host + "/team/app"
	digestOf := func(r result) string {
		t.Helper()
		wantCode(t, r, 0)
		_, d, ok := strings.Cut(strings.TrimSpace(r.stdout), "@")
		if !ok {
			t.Fatalf("push printed %q", r.stdout)
		}
		return d
	}
	signed := digestOf(gitsync(t, "push", "artifact", dir, repo+":v1", "--plain-http"))
	ocitest.Sign(t, keys, host+"/team/app@"+signed)
	writeFiles(t, dir, map[string]string{"cm.yaml": configMap("app", "k", "v2")})
	digestOf(gitsync(t, "push", "artifact", dir, repo+":v2", "--plain-http"))

	pub := filepath.Join(keys, "cosign.pub")
	ok := gitsync(t, "build", "--url", repo+":v1", "--plain-http", "--cosign-key", pub)
	wantCode(t, ok, 0)
	if ok.stdout != want.stdout {
		t.Errorf("the signed artifact built:\n%s\nwant:\n%s", ok.stdout, want.stdout)
	}
	byDigest := gitsync(t, "build", "--url", repo+"@"+signed, "--plain-http", "--cosign-key", pub)
	wantCode(t, byDigest, 0)

	for _, tc := range []struct {
		name, url, key, want string
	}{
		{"unsigned", repo + ":v2", pub, "has no cosign signature"},
		{"signed by another key", repo + ":v1", filepath.Join(other, "cosign.pub"), "signed by none of the 1 keys"},
	} {
		r := gitsync(t, "build", "--url", tc.url, "--plain-http", "--cosign-key", tc.key)
		wantCode(t, r, exitError)
		if !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("%s: want nothing built and %q:\n%s", tc.name, tc.want, r)
		}
	}
	// The tag moved to new files after the signing: the signature does not
	// follow it.
	digestOf(gitsync(t, "push", "artifact", dir, repo+":v1", "--plain-http"))
	moved := gitsync(t, "build", "--url", repo+":v1", "--plain-http", "--cosign-key", pub)
	wantCode(t, moved, exitError)
	if !strings.Contains(moved.stderr, "has no cosign signature") {
		t.Errorf("a retagged artifact:\n%s", moved)
	}
}
