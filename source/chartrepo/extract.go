package chartrepo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/oci"
)

// archiveLimits bound a chart archive's expansion (its download is capped
// by MaxChartBytes).
var archiveLimits = oci.Limits{Files: 10_000, FileBytes: 64 << 20}

// Extract unpacks the stored archive a into dst (created if missing),
// checking it against its digest, with oci.Extract's confinement and
// bounds: the chart's directory lands at dst/NAME. A GitSync whose source
// is a chart renders it there, in the agent and in the CLI.
func Extract(a helm.Archive, dst string) error {
	f, err := os.Open(a.File)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	h := sha256.New()
	if err := oci.Extract(io.TeeReader(f, h), dst, archiveLimits); err != nil {
		return fmt.Errorf("chart %s %s: %w", a.Name, a.Version, err)
	}
	if _, err := io.Copy(h, f); err != nil { // what gzip's end left unread
		return err
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != a.Digest {
		return fmt.Errorf("chart %s %s: the stored archive hashes to %s, not %s", a.Name, a.Version, got, a.Digest)
	}
	if _, err := os.Stat(filepath.Join(dst, a.Name, "Chart.yaml")); err != nil {
		return fmt.Errorf("chart %s %s: the archive has no %s/Chart.yaml: %w", a.Name, a.Version, a.Name, oci.ErrLayout)
	}
	return nil
}
