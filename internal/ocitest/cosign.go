// Package ocitest drives the real cosign the tests are built with (the
// testbin's): the one signer of OCI artifacts and charts in tests, as
// internal/gittest's keys are of commits.
package ocitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gitsync.dev/gitsync/internal/testenv"
)

// Cosign runs cosign in dir with an empty key password and dir as its
// home (no user configuration, no transparency log cache outside it) and
// returns its output; a failure fails the test.
func Cosign(t testing.TB, dir string, args ...string) string {
	t.Helper()
	bin, err := testenv.BinDir("cosign")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "cosign"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "COSIGN_PASSWORD=", "HOME="+dir, "TUF_ROOT="+filepath.Join(dir, "tuf"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Sign signs ref (REGISTRY/REPOSITORY@sha256:…) on a plain-HTTP registry
// with the key cosign.key of dir, as `cosign generate-key-pair` wrote it
// there, without a transparency-log upload.
func Sign(t testing.TB, dir, ref string) {
	t.Helper()
	Cosign(t, dir, "sign", "--key", "cosign.key", "--tlog-upload=false", "--allow-http-registry", "--allow-insecure-registry", "-y", ref)
}
