package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// PushOptions describe the artifact Push writes.
type PushOptions struct {
	// Source and Revision say where the files came from (a repository URL
	// and a commit, say); they become the manifest's source and revision
	// annotations when set.
	Source, Revision string
	// Created is an RFC 3339 time for the created annotation; empty leaves
	// it out, so the same files push to the same digest.
	Created string
}

// Push packs the files under dir (a ".git" directory left out; links
// refused) as a Flux artifact and uploads it to a, whose Ref must be a
// tag. It returns the revision pushed.
func (c *Client) Push(ctx context.Context, dir string, a Artifact, o PushOptions) (Revision, error) {
	if a.Ref.Tag == "" || a.Ref.Semver != "" || a.Ref.Digest != "" {
		return Revision{}, fmt.Errorf("push %s: name the tag to push, oci://REGISTRY/REPOSITORY:TAG: %w", a.URL, ErrInvalid)
	}
	if err := a.Ref.Validate(); err != nil {
		return Revision{}, err
	}
	repo, err := a.repository(c.opts.PlainHTTP)
	if err != nil {
		return Revision{}, err
	}
	blob, err := Pack(dir)
	if err != nil {
		return Revision{}, err
	}
	img, err := mutate.Append(
		mutate.MediaType(mutate.ConfigMediaType(empty.Image, FluxConfigMediaType), types.OCIManifestSchema1),
		mutate.Addendum{Layer: static.NewLayer(blob, FluxContentMediaType), MediaType: FluxContentMediaType})
	if err != nil {
		return Revision{}, err
	}
	ann := map[string]string{}
	for k, v := range map[string]string{AnnotationSource: o.Source, AnnotationRevision: o.Revision, AnnotationCreated: o.Created} {
		if v != "" {
			ann[k] = v
		}
	}
	if len(ann) > 0 {
		img = mutate.Annotations(img, ann).(v1.Image)
	}
	if err := remote.Write(repo.Tag(a.Ref.Tag), img, append(c.remoteOptions(), remote.WithContext(ctx))...); err != nil {
		return Revision{}, fmt.Errorf("push %s:%s: %w", a.URL, a.Ref.Tag, err)
	}
	d, err := img.Digest()
	if err != nil {
		return Revision{}, err
	}
	return Revision{Tag: a.Ref.Tag, Digest: d.String()}, nil
}

// Pack is the gzip'd tar of the files under dir as Push uploads it:
// entries sorted, paths relative to dir, no owners or times, modes 0755
// for directories and 0644 for files, ".git" left out. A symbolic link or
// other non-regular file is an error naming it.
func Pack(dir string) ([]byte, error) {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file; an artifact holds files and directories only", p)
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, p := range names {
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return nil, err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), Format: tar.FormatPAX}
		if fi.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			if err := tw.WriteHeader(h); err != nil {
				return nil, err
			}
			continue
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, fi.Size()
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(tw, io.LimitReader(f, fi.Size()))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
