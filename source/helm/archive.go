package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// Archive is a packaged chart (.tgz) the caller downloaded for a Chart.yaml
// dependency; the render adds it under charts/ as `helm dependency build`
// does. It is plain data, so it crosses into a render child with Options.
type Archive struct {
	// Name and Version are the chart's, as its repository lists them.
	Name, Version string
	// Digest is "sha256:<hex>" of the archive; the render refuses a file
	// that does not hash to it.
	Digest string
	// File is where the archive lies on the caller's disk, read through
	// Files.Archive (never a repository path).
	File string
	// Origin is where it was read, for its signature: the archive's URL in
	// an HTTP repository (its provenance file is beside it), or
	// REGISTRY/REPOSITORY@sha256:<manifest digest> in an OCI registry. It
	// is not part of Key: it does not change what renders.
	Origin string `json:",omitempty"`
}

// fileName is the name `helm dependency build` gives the archive in charts/.
func (a Archive) fileName() string { return a.Name + "-" + a.Version + ".tgz" }

// maxArchiveDepth bounds archives nested in archives' charts/.
const maxArchiveDepth = 4

// addDependencies returns the files that add each missing dependency of
// the chart at dir: a file:// chart directory of the repository under
// charts/<name>/, a chart repository's from archives as charts/<file>.tgz.
// A dependency neither covers stays missing.
func addDependencies(ctx context.Context, files Files, dir string, missing []*chart.Dependency, archives []Archive) ([]*loader.BufferedFile, error) {
	var out []*loader.BufferedFile
	done := map[string]bool{}
	for _, d := range missing {
		switch {
		case isFileDependency(d):
			if done["dir:"+d.Name] {
				continue
			}
			done["dir:"+d.Name] = true
			depDir, err := fileDependencyDir(dir, d)
			if err != nil {
				return nil, err
			}
			sub, err := chartFiles(ctx, files, depDir)
			if err != nil {
				return nil, err
			}
			for _, f := range sub {
				out = append(out, &loader.BufferedFile{Name: path.Join(chartsDir, d.Name, f.Name), Data: f.Data})
			}
		case downloaded(d.Repository):
			for _, a := range archives {
				if a.Name != d.Name || done[a.fileName()] {
					continue
				}
				done[a.fileName()] = true
				f, err := readArchive(ctx, files, dir, a)
				if err != nil {
					return nil, err
				}
				out = append(out, f)
			}
		}
	}
	return out, nil
}

// readArchive reads a downloaded archive, checks its digest and that it
// unpacks within the render's caps.
func readArchive(ctx context.Context, files Files, dir string, a Archive) (*loader.BufferedFile, error) {
	name := path.Join(chartsDir, a.fileName())
	data, err := readChecked(ctx, files, path.Join(dir, name), a)
	if err != nil {
		return nil, err
	}
	return &loader.BufferedFile{Name: name, Data: data}, nil
}

// readChecked reads the downloaded archive a as the repository file name:
// it must hash to a.Digest and unpack within the render's caps.
func readChecked(ctx context.Context, files Files, name string, a Archive) ([]byte, error) {
	data, err := files.Archive(ctx, name, a)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != a.Digest {
		return nil, &Error{Path: name, Detail: fmt.Sprintf("downloaded chart %s %s hashes to %s, not %s", a.Name, a.Version, got, a.Digest)}
	}
	if err := checkArchive(files, name, data, 0); err != nil {
		return nil, err
	}
	return data, nil
}

// loadDownloaded builds the chart of Options.Chart, a chart downloaded from
// a repository that renders dir's values: read and checked as a
// dependency's archive is, and complete (a packaged chart carries its
// dependencies in charts/).
func loadDownloaded(ctx context.Context, files Files, dir string, a Archive) (*chart.Chart, error) {
	name := path.Join(dir, a.fileName())
	data, err := readChecked(ctx, files, name, a)
	if err != nil {
		return nil, err
	}
	c, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return nil, &Error{Path: name, Detail: fmt.Sprintf("downloaded chart %s %s not loadable", a.Name, a.Version), Err: err}
	}
	if err := checkDependencies(c); err != nil {
		return nil, &Error{Path: name, Detail: err.Error()}
	}
	return c, nil
}

// isChartArchive reports whether name (relative to a chart) is a packaged
// subchart Helm's loader unpacks: charts/*.tgz.
func isChartArchive(name string) bool {
	dir, file := path.Split(name)
	return dir == chartsDir+"/" && strings.HasSuffix(file, ".tgz")
}

// checkArchive unpacks a chart archive without keeping it, charging each
// member to the render's input caps (Files.Charge) before Helm's loader
// unpacks it again: an archive that expands past the caps (a gzip bomb) is
// refused like a repository that large, instead of meeting only Helm's own
// 100 MiB cap and the child's memory limit. Archives in its charts/ are
// checked the same way.
func checkArchive(files Files, name string, data []byte, depth int) error {
	if depth > maxArchiveDepth {
		return &Error{Path: name, Detail: fmt.Sprintf("chart archives nested more than %d deep", maxArchiveDepth)}
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return &Error{Path: name, Detail: "not a gzip chart archive", Err: err}
	}
	tr := tar.NewReader(zr)
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &Error{Path: name, Detail: "not a chart archive", Err: err}
		}
		if hd.Typeflag != tar.TypeReg {
			continue
		}
		member := path.Join(name, hd.Name)
		if err := files.Charge(member, hd.Size); err != nil {
			return err
		}
		// Nested archives (<chart>/charts/x.tgz) are what the loader
		// unpacks next; they are small enough to hold, being charged.
		_, rest, _ := strings.Cut(hd.Name, "/")
		if !isChartArchive(rest) {
			continue
		}
		inner, err := io.ReadAll(io.LimitReader(tr, hd.Size))
		if err != nil {
			return &Error{Path: member, Detail: "not a chart archive", Err: err}
		}
		if err := checkArchive(files, member, inner, depth+1); err != nil {
			return err
		}
	}
}
