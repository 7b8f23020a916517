package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// writeLayout replaces dir with an OCI image layout whose index.json points
// at idx, named ref (annotation org.opencontainers.image.ref.name).
func writeLayout(dir string, idx v1.ImageIndex, ref name.Reference) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	err = p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.Name(),
	}))
	if err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	return nil
}

// writeTarball writes platform's image of idx as a `docker load` tarball
// tagged ref (containerd's `ctr images import` reads it too).
func writeTarball(path string, idx v1.ImageIndex, platform string, ref name.Reference) error {
	img, err := imageFor(idx, platform)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := tarball.WriteToFile(path, ref, img); err != nil {
		return fmt.Errorf("tarball %s: %w", path, err)
	}
	return nil
}

// imageFor returns the image of idx built for platform ("linux/amd64").
func imageFor(idx v1.ImageIndex, platform string) (v1.Image, error) {
	want, err := v1.ParsePlatform(platform)
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.Equals(*want) {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("no %s image in the index", platform)
}
