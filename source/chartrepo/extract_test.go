package chartrepo

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/oci"
)

// archive writes a chart archive of entries (name → body; a body starting
// "->" is a symlink to the rest) and returns it as a stored helm.Archive.
func archive(t *testing.T, name string, entries map[string]string) helm.Archive {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for p, body := range entries {
		h := &tar.Header{Name: p, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}
		if target, ok := strings.CutPrefix(body, "->"); ok {
			h = &tar.Header{Name: p, Linkname: target, Typeflag: tar.TypeSymlink}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), name+".tgz")
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return helm.Archive{Name: name, Version: "1.0.0", Digest: "sha256:" + hex.EncodeToString(sum[:]), File: file}
}

func TestExtract(t *testing.T) {
	chart := map[string]string{"leaf/Chart.yaml": "apiVersion: v2\nname: leaf\nversion: 1.0.0\n", "leaf/templates/cm.yaml": "kind: ConfigMap\n"}
	good := archive(t, "leaf", chart)
	dst := filepath.Join(t.TempDir(), "out")
	if err := Extract(good, dst); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "leaf", "templates", "cm.yaml")); err != nil || string(b) != "kind: ConfigMap\n" {
		t.Errorf("extracted template: %q %v", b, err)
	}

	for _, tc := range []struct {
		name    string
		archive helm.Archive
		want    string
		is      error
	}{
		{"another digest", func() helm.Archive { a := good; a.Digest = "sha256:" + strings.Repeat("0", 64); return a }(), "hashes to", nil},
		{"no Chart.yaml of its name", archive(t, "leaf", map[string]string{"other/Chart.yaml": "name: other\n"}), "has no leaf/Chart.yaml", oci.ErrLayout},
		{"a link", archive(t, "leaf", map[string]string{"leaf/Chart.yaml": "name: leaf\n", "leaf/x": "->/etc/passwd"}), "is a link", oci.ErrLayout},
		{"a path out", archive(t, "leaf", map[string]string{"../evil.yaml": "x"}), "", oci.ErrLayout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Extract(tc.archive, filepath.Join(t.TempDir(), "out"))
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Errorf("Extract = %v; want an error containing %q (%v)", err, tc.want, tc.is)
			}
		})
	}
}
