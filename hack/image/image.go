package main

import (
	"fmt"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Spec says what goes into the image and how it is labelled.
type Spec struct {
	// Binaries maps a platform ("linux/amd64") to its static gitsync binary.
	Binaries map[string]string
	// CACerts is the PEM bundle installed as /etc/ssl/certs/ca-certificates.crt,
	// where Go's crypto/x509 looks on Linux: Git over HTTPS needs it.
	CACerts string
	// Version, Revision and Source become the OCI labels and annotations
	// org.opencontainers.image.{version,revision,source}.
	Version, Revision, Source string
	// Created is the image's creation time and every file's mtime. Set from
	// the commit's time, the same commit builds the same digest.
	Created time.Time
}

// labels are the OCI labels of every image and the annotations of the index.
func (s Spec) labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    "gitsync",
		"org.opencontainers.image.source":   s.Source,
		"org.opencontainers.image.revision": s.Revision,
		"org.opencontainers.image.version":  s.Version,
		"org.opencontainers.image.created":  s.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
}

// Build makes the multi-platform index: one image per binary, in the order
// of platforms.
func Build(s Spec, platforms []string) (v1.ImageIndex, error) {
	ca, err := os.ReadFile(s.CACerts)
	if err != nil {
		return nil, fmt.Errorf("CA certificates: %w", err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, p := range platforms {
		plat, err := v1.ParsePlatform(p)
		if err != nil {
			return nil, fmt.Errorf("platform %q: %w", p, err)
		}
		bin, ok := s.Binaries[p]
		if !ok {
			return nil, fmt.Errorf("platform %s: no binary given", p)
		}
		img, err := s.image(*plat, bin, ca)
		if err != nil {
			return nil, fmt.Errorf("platform %s: %w", p, err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
	}
	idx = mutate.AppendManifests(idx, adds...)
	return mutate.Annotations(idx, s.labels()).(v1.ImageIndex), nil
}

// image is one platform's image: a single layer on an empty base.
func (s Spec) image(p v1.Platform, binPath string, ca []byte) (v1.Image, error) {
	bin, err := os.ReadFile(binPath)
	if err != nil {
		return nil, fmt.Errorf("binary: %w", err)
	}
	l, err := layer(rootfs(bin, ca), s.Created)
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	created := v1.Time{Time: s.Created.UTC()}
	base, err = mutate.ConfigFile(base, &v1.ConfigFile{
		Architecture: p.Architecture,
		OS:           p.OS,
		Variant:      p.Variant,
		Created:      created,
		Config: v1.Config{
			Entrypoint: []string{"/gitsync"},
			User:       fmt.Sprintf("%d:%d", uid, gid),
			WorkingDir: home,
			Env: []string{
				"PATH=/",
				"HOME=" + home,
				"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
			},
			Labels: s.labels(),
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, err
	}
	return mutate.Append(base, mutate.Addendum{
		Layer: l,
		History: v1.History{
			Created:   created,
			CreatedBy: "hack/image: gitsync " + s.Version + " " + p.String(),
			Comment:   "static gitsync binary, CA certificates, user nonroot",
		},
	})
}
