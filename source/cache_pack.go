package source

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"gitsync.dev/gitsync/source/render"
)

// packedRender is a render as the Cache keeps it between uses: its objects
// as one DEFLATE-compressed JSON array instead of a tree of maps. An object
// costs ~4 KB of heap as an unstructured.Unstructured and a few hundred
// bytes packed, so a cache of every GitSync's last render (100,000 objects
// on a large agent) stays small; a caller gets a fresh copy (expand), which
// is garbage once its reconcile is done.
type packedRender struct {
	digest  string
	sops    map[string]render.SOPSFile
	objects []byte
	count   int
}

// pack encodes r. The objects decode back to the same values and types
// (expand uses the JSON decoder the renderer uses: integers as int64).
func pack(r *render.Rendered) (*packedRender, error) {
	list := make([]map[string]any, len(r.Objects))
	for i, o := range r.Objects {
		list[i] = o.Object
	}
	var buf bytes.Buffer
	zw, err := flate.NewWriter(&buf, flate.BestSpeed)
	if err != nil {
		return nil, err
	}
	if err := json.NewEncoder(zw).Encode(list); err != nil {
		return nil, fmt.Errorf("pack render %s: %w", r.Digest, err)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return &packedRender{digest: r.Digest, sops: r.SOPS, objects: bytes.Clone(buf.Bytes()), count: len(r.Objects)}, nil
}

// expand decodes a fresh copy of the render.
func (p *packedRender) expand() (*render.Rendered, error) {
	data, err := io.ReadAll(flate.NewReader(bytes.NewReader(p.objects)))
	if err != nil {
		return nil, fmt.Errorf("unpack render %s: %w", p.digest, err)
	}
	var list []map[string]any
	if err := utiljson.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("unpack render %s: %w", p.digest, err)
	}
	if len(list) != p.count {
		return nil, fmt.Errorf("unpack render %s: %d objects, want %d", p.digest, len(list), p.count)
	}
	objs := make([]*unstructured.Unstructured, len(list))
	for i, m := range list {
		objs[i] = &unstructured.Unstructured{Object: m}
	}
	return &render.Rendered{Objects: objs, Digest: p.digest, SOPS: p.sops}, nil
}

// size is what the packed render holds, for the LRU's byte bound.
func (p *packedRender) size() int64 {
	return int64(len(p.objects) + len(p.digest))
}
