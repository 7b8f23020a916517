package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's one user, matching the chart's runAsUser/runAsGroup.
const (
	uid  = 65532
	gid  = 65532
	home = "/home/nonroot"
)

// entry is one file or directory of the image's filesystem.
type entry struct {
	name     string // path inside the image, without a leading slash
	mode     int64
	uid, gid int
	data     []byte // nil for a directory
}

// rootfs lists the whole filesystem: the binary, the CA bundle, and just
// enough of /etc for a non-root user with a home (what distroless-static
// holds, without the rest). /tmp exists for `docker run`; the chart mounts an
// emptyDir there because the root filesystem is read-only.
func rootfs(binary, caCerts []byte) []entry {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:%s:/sbin/nologin\n", uid, gid, home)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", gid)
	return []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: caCerts},
		{name: "gitsync", mode: 0o755, data: binary},
		{name: "home/", mode: 0o755},
		{name: home[1:] + "/", mode: 0o700, uid: uid, gid: gid},
		{name: "tmp/", mode: 0o1777},
	}
}

// layer writes entries as one OCI layer, every timestamp set to mtime, so
// the same inputs always make the same digest.
func layer(entries []entry, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid,
			ModTime: mtime,
		}
		if e.data == nil {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("layer %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
