package main

import (
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
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
