package main

import (
	"archive/tar"
	"context"
	"crypto/x509"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// What the test asks `make image` to stamp.
const (
	testRef     = "localhost/gitsync-test:9.8.7-test"
	testVersion = "9.8.7-test"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
	testDate    = "2026-01-02T03:04:05Z"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// makeImage runs `make image` once for the package's tests, into a temporary
// directory, the way a user does; it takes minutes on a cold build cache.
func makeImage(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("make image builds two binaries; skipped with -short")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "gitsync-image-test-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("make", "-s", "-C", "../..", "image", "IMAGE_DIR="+buildDir, "IMAGE="+testRef,
			"VERSION="+testVersion, "COMMIT="+testCommit, "BUILD_DATE="+testDate)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("make image: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// layoutIndex reads the index `make image` wrote into the OCI layout.
func layoutIndex(t *testing.T, dir string) v1.ImageIndex {
	t.Helper()
	outer, err := layout.ImageIndexFromPath(filepath.Join(dir, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := outer.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("index.json lists %d entries, want 1", len(m.Manifests))
	}
	if got := m.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got != testRef {
		t.Errorf("layout names the image %q, want %q", got, testRef)
	}
	idx, err := outer.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func TestImageLayout(t *testing.T) {
	idx := layoutIndex(t, makeImage(t))
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range m.Manifests {
		platforms = append(platforms, d.Platform.String())
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, platforms); diff != "" {
		t.Fatalf("index platforms (-want +got):\n%s", diff)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.source":   "https://github.com/gitsync-dev/gitsync",
		"org.opencontainers.image.revision": testCommit,
		"org.opencontainers.image.version":  testVersion,
		"org.opencontainers.image.created":  testDate,
	}
	for _, d := range m.Manifests {
		t.Run(d.Platform.String(), func(t *testing.T) {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.OS != d.Platform.OS || cf.Architecture != d.Platform.Architecture {
				t.Errorf("config platform %s/%s, index says %s", cf.OS, cf.Architecture, d.Platform)
			}
			if cf.Config.User != "65532:65532" {
				t.Errorf("user %q, want 65532:65532 (the chart's runAsUser)", cf.Config.User)
			}
			if diff := cmp.Diff([]string{"/gitsync"}, cf.Config.Entrypoint); diff != "" {
				t.Errorf("entrypoint (-want +got):\n%s", diff)
			}
			for k, want := range wantLabels {
				if got := cf.Config.Labels[k]; got != want {
					t.Errorf("label %s = %q, want %q", k, got, want)
				}
			}
			files := extract(t, img)
			checkFiles(t, files)
			checkBinary(t, files["gitsync"], d.Platform.Architecture)
		})
	}
}

// file is one regular file of an image's filesystem.
type file struct {
	hdr  *tar.Header
	data []byte
}

// extract reads img's flattened filesystem through the library.
func extract(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimPrefix(h.Name, "/")] = file{hdr: h, data: data}
	}
	return files
}

func checkFiles(t *testing.T, files map[string]file) {
	t.Helper()
	ca := files["etc/ssl/certs/ca-certificates.crt"]
	if pool := x509.NewCertPool(); !pool.AppendCertsFromPEM(ca.data) {
		t.Error("/etc/ssl/certs/ca-certificates.crt holds no certificate")
	}
	if !strings.Contains(string(files["etc/passwd"].data), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no user 65532:\n%s", files["etc/passwd"].data)
	}
	bin := files["gitsync"]
	if bin.hdr == nil || bin.hdr.Mode&0o111 == 0 || bin.hdr.Uid != 0 {
		t.Errorf("/gitsync header %+v, want an executable owned by root (the user cannot replace it)", bin.hdr)
	}
}

// checkBinary asserts the binary is static and built for arch.
func checkBinary(t *testing.T, bin file, arch string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gitsync")
	if err := os.WriteFile(path, bin.data, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if f.Machine != want {
		t.Errorf("binary machine %v, want %v", f.Machine, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("binary needs a dynamic loader: it cannot run on an empty base")
		}
	}
	if arch != "amd64" {
		return
	}
	out, err := exec.Command(path, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("gitsync version from the image: %v\n%s", err, out)
	}
	for _, w := range []string{"gitsync " + testVersion + "\n", "commit: " + testCommit + "\n", "built:  " + testDate + "\n"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("gitsync version from the image prints\n%s\nwant %q", out, w)
		}
	}
}

// TestImageTarball reads gitsync.tar as `docker load` does: one image,
// tagged with the reference, the same config as the layout's amd64 image.
func TestImageTarball(t *testing.T) {
	dir := makeImage(t)
	path := filepath.Join(dir, "gitsync.tar")
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || len(m[0].RepoTags) != 1 || m[0].RepoTags[0] != testRef {
		t.Fatalf("manifest.json = %+v, want one image tagged %s", m, testRef)
	}
	tag, err := name.NewTag(testRef)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatal(err)
	}
	want, err := imageFor(layoutIndex(t, dir), "linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	gotCfg, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	wantCfg, err := want.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if gotCfg != wantCfg {
		t.Errorf("tarball config %s, want the layout's linux/amd64 config %s", gotCfg, wantCfg)
	}
}

// TestPush pushes the layout to go-containerregistry's registry on loopback,
// as `make image-push` does, and pulls both platforms back by the same digest.
func TestPush(t *testing.T) {
	dir := makeImage(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(u.Host + "/gitsync/gitsync:" + testVersion)
	if err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"push", "-layout", filepath.Join(dir, "oci"), "-image", ref.String()}); err != nil {
		t.Fatal(err)
	}

	want, err := layoutIndex(t, dir).Digest()
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(ref)
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest != want {
		t.Errorf("registry serves %s, want the layout's index %s", desc.Digest, want)
	}
	for _, p := range []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}} {
		img, err := remote.Image(ref, remote.WithPlatform(p))
		if err != nil {
			t.Fatalf("pull %s: %v", p, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != p.Architecture {
			t.Errorf("pulled %s, got architecture %s", p, cf.Architecture)
		}
	}
}

// TestPushRefusesMissingLayout: pushing before building says what to run.
func TestPushRefusesMissingLayout(t *testing.T) {
	err := run(context.Background(), []string{"push", "-layout", filepath.Join(t.TempDir(), "oci"), "-image", "localhost:1/x:y"})
	if err == nil || !strings.Contains(err.Error(), "make image") {
		t.Errorf("push of a missing layout: %v, want an error that says to run make image", err)
	}
}

// TestImageReproducible assembles the index again from the binaries `make
// image` built: the same inputs give the layout's digest, byte for byte.
func TestImageReproducible(t *testing.T) {
	dir := makeImage(t)
	created, err := time.Parse(time.RFC3339, testDate)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := Build(Spec{
		Binaries: map[string]string{
			"linux/amd64": filepath.Join(dir, "linux_amd64", "gitsync"),
			"linux/arm64": filepath.Join(dir, "linux_arm64", "gitsync"),
		},
		CACerts: "/etc/ssl/certs/ca-certificates.crt",
		Version: testVersion, Revision: testCommit, Source: "https://github.com/gitsync-dev/gitsync",
		Created: created,
	}, []string{"linux/amd64", "linux/arm64"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	want, err := layoutIndex(t, dir).Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("the same binaries and labels assembled again give index %s, make image wrote %s", got, want)
	}
}
