package oci

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Pulled says what Pull read.
type Pulled struct {
	// Revision is the artifact's revision (the tag given, the digest read).
	Revision Revision
	// Layer is the digest of the layer whose files were written.
	Layer string
	// Annotations are the manifest's annotations (source, revision, …).
	Annotations map[string]string
}

// ErrTooLarge marks an artifact beyond the Client's Limits.
var ErrTooLarge = errors.New("artifact too large")

// ErrLayout marks an artifact that is not a directory of files gitsync
// reads: an index, no or several content layers, links, devices.
var ErrLayout = errors.New("artifact layout not readable")

// Pull writes the files of the artifact rev names (rev.Digest; rev.Tag
// only labels it) into dst, which must not exist: they are written beside
// it and renamed into place once every byte matched its digest, so dst is
// either the whole artifact or absent.
func (c *Client) Pull(ctx context.Context, a Artifact, rev Revision, dst string) (*Pulled, error) {
	repo, err := a.repository(c.opts.PlainHTTP)
	if err != nil {
		return nil, err
	}
	if rev.Digest == "" {
		return nil, fmt.Errorf("%s: pull needs a resolved digest: %w", a.URL, ErrInvalid)
	}
	if _, err := os.Lstat(dst); err == nil {
		return nil, fmt.Errorf("pull into %s: it exists", dst)
	}
	desc, err := c.puller.Get(ctx, repo.Digest(rev.Digest))
	if err != nil {
		return nil, fmt.Errorf("%s@%s: %w", a.URL, rev.Digest, err)
	}
	if int64(len(desc.Manifest)) > c.opts.Limits.ManifestBytes {
		return nil, fmt.Errorf("%s@%s: manifest of %d bytes, more than %d: %w", a.URL, rev.Digest, len(desc.Manifest), c.opts.Limits.ManifestBytes, ErrTooLarge)
	}
	if desc.MediaType.IsIndex() {
		return nil, fmt.Errorf("%s@%s is an index of %s, not one artifact: name one of its manifests by digest: %w", a.URL, rev.Digest, desc.MediaType, ErrLayout)
	}
	m, err := v1.ParseManifest(strings.NewReader(string(desc.Manifest)))
	if err != nil {
		return nil, fmt.Errorf("%s@%s: manifest: %w", a.URL, rev.Digest, err)
	}
	layer, err := contentLayer(m)
	if err != nil {
		return nil, fmt.Errorf("%s@%s: %w", a.URL, rev.Digest, err)
	}
	if layer.Size > c.opts.Limits.LayerBytes {
		return nil, fmt.Errorf("%s@%s: layer of %d bytes, more than %d: %w", a.URL, rev.Digest, layer.Size, c.opts.Limits.LayerBytes, ErrTooLarge)
	}
	l, err := c.puller.Layer(ctx, repo.Digest(layer.Digest.String()))
	if err != nil {
		return nil, fmt.Errorf("%s@%s: layer %s: %w", a.URL, rev.Digest, layer.Digest, err)
	}
	body, err := l.Compressed() // checks the digest as it is read
	if err != nil {
		return nil, fmt.Errorf("%s@%s: layer %s: %w", a.URL, rev.Digest, layer.Digest, err)
	}
	defer body.Close()

	tmp, err := os.MkdirTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".partial-")
	if err != nil {
		return nil, err
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	capped := &cappedReader{r: body, left: layer.Size + 1}
	if err := c.untar(capped, tmp); err != nil {
		return nil, fmt.Errorf("%s@%s: layer %s: %w", a.URL, rev.Digest, layer.Digest, err)
	}
	// Read to the end so the digest is checked over every byte.
	if _, err := io.Copy(io.Discard, capped); err != nil {
		return nil, fmt.Errorf("%s@%s: layer %s: %w", a.URL, rev.Digest, layer.Digest, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return nil, err
	}
	done = true
	return &Pulled{Revision: rev, Layer: layer.Digest.String(), Annotations: m.Annotations}, nil
}

// contentLayer picks the layer holding the files: the only layer, or the
// only Flux content or Helm chart layer among several.
func contentLayer(m *v1.Manifest) (v1.Descriptor, error) {
	var content []v1.Descriptor // Flux's content layer, or a Helm chart's beside its provenance
	for _, l := range m.Layers {
		if l.MediaType == FluxContentMediaType || l.MediaType == HelmChartContentMediaType {
			content = append(content, l)
		}
	}
	switch {
	case len(m.Layers) == 1 && contentTypes[m.Layers[0].MediaType]:
		return m.Layers[0], nil
	case len(m.Layers) == 1:
		return v1.Descriptor{}, fmt.Errorf("its layer is %s, not a gzip'd tar: %w", m.Layers[0].MediaType, ErrLayout)
	case len(content) == 1:
		return content[0], nil
	case len(m.Layers) == 0:
		return v1.Descriptor{}, fmt.Errorf("it has no layer: %w", ErrLayout)
	}
	return v1.Descriptor{}, fmt.Errorf("it has %d layers and %d of type %s or %s; gitsync reads one: %w", len(m.Layers), len(content), FluxContentMediaType, HelmChartContentMediaType, ErrLayout)
}

// untar writes the entries of the gzip'd tar r into dir within the
// Client's limits (Extract).
func (c *Client) untar(r io.Reader, dir string) error { return Extract(r, dir, c.opts.Limits) }

// Extract writes the entries of the gzip'd tar r into the existing
// directory dir within lim's Files and FileBytes (zero fields take
// DefaultLimits'), through an os.Root: nothing lands outside dir. Only
// directories and regular files are written; a link, device or duplicate
// entry is refused rather than skipped, so what is rendered is never a
// part of what was published. Artifacts and chart archives are unpacked
// by it alike.
func Extract(r io.Reader, dir string, lim Limits) error {
	d := DefaultLimits()
	if lim.Files <= 0 {
		lim.Files = d.Files
	}
	if lim.FileBytes <= 0 {
		lim.FileBytes = d.FileBytes
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("not gzip: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(zr)
	seen := map[string]bool{}
	var entries int
	var written int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("tar: %w", err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		name, err := entryName(h.Name)
		if err != nil {
			return err
		}
		if name == "" { // the top directory itself
			continue
		}
		if entries++; entries > lim.Files {
			return fmt.Errorf("more than %d entries: %w", lim.Files, ErrTooLarge)
		}
		if seen[name] {
			return fmt.Errorf("%s appears twice: %w", name, ErrLayout)
		}
		seen[name] = true
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if h.Size > lim.FileBytes-written {
				return fmt.Errorf("files of more than %d bytes: %w", lim.FileBytes, ErrTooLarge)
			}
			if d := path.Dir(name); d != "." {
				if err := root.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			n, err := io.Copy(f, io.LimitReader(tr, h.Size))
			written += n
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		case tar.TypeSymlink, tar.TypeLink:
			return fmt.Errorf("%s is a link; artifacts are read as plain files: %w", name, ErrLayout)
		default:
			return fmt.Errorf("%s is not a file or directory (tar type %q): %w", name, h.Typeflag, ErrLayout)
		}
	}
	// The gzip stream's own checksum is checked at its end.
	if _, err := io.Copy(io.Discard, io.LimitReader(zr, 1)); err != nil {
		return fmt.Errorf("gzip: %w", err)
	}
	return nil
}

// entryName is a tar entry's name as a clean relative slash path ("" for
// the top directory), or an error for one that would leave the directory.
func entryName(n string) (string, error) {
	if strings.ContainsRune(n, 0) || strings.Contains(n, `\`) {
		return "", fmt.Errorf("entry %q: not a portable path: %w", n, ErrLayout)
	}
	if strings.HasPrefix(n, "/") {
		return "", fmt.Errorf("entry %q is absolute: %w", n, ErrLayout)
	}
	clean := path.Clean(n)
	if clean == "." {
		return "", nil
	}
	if !filepath.IsLocal(clean) {
		return "", fmt.Errorf("entry %q leaves the artifact: %w", n, ErrLayout)
	}
	return clean, nil
}

// cappedReader fails once more than left bytes were read: the registry
// stated the layer's size, and a longer body is refused, not buffered.
type cappedReader struct {
	r    io.Reader
	left int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, fmt.Errorf("layer longer than its descriptor says: %w", ErrTooLarge)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
