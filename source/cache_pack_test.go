package source

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/source/render"
)

// TestPackRoundTrip: a packed render expands to the same objects with the
// same Go types (int64 integers, float64 fractions, nested lists), the
// same digest, and a copy of its own; packed, it is several times smaller
// than the objects' JSON.
func TestPackRoundTrip(t *testing.T) {
	for _, dir := range []string{"plain", "kustomize/overlays/prod", "lists", "crd"} {
		t.Run(dir, func(t *testing.T) {
			r, err := render.Render(context.Background(), "render/testdata/render", dir, render.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			p, err := pack(r)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.expand()
			if err != nil {
				t.Fatal(err)
			}
			if got.Digest != r.Digest || len(got.Objects) != len(r.Objects) {
				t.Fatalf("expanded %d objects, digest %s; want %d, %s", len(got.Objects), got.Digest, len(r.Objects), r.Digest)
			}
			for i := range r.Objects {
				if !reflect.DeepEqual(got.Objects[i].Object, r.Objects[i].Object) {
					t.Errorf("object %d differs after a round trip:\n got %#v\nwant %#v", i, got.Objects[i].Object, r.Objects[i].Object)
				}
			}
			got.Objects[0].SetName("changed")
			again, err := p.expand()
			if err != nil || again.Objects[0].GetName() == "changed" {
				t.Errorf("a caller's change reached the packed render (%v)", err)
			}
		})
	}

	big := &render.Rendered{Digest: "sha256:x"}
	for i := range 100 {
		big.Objects = append(big.Objects, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "cm-" + strings.Repeat("a", i%7), "labels": map[string]any{"app": "x"}},
			"data":     map[string]any{"n": int64(i), "f": 0.5, "payload": strings.Repeat("x", 512)},
			"list":     []any{int64(1), "two", nil, true},
		}})
	}
	p, err := pack(big)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.expand()
	if err != nil {
		t.Fatal(err)
	}
	for i := range big.Objects {
		if !reflect.DeepEqual(got.Objects[i].Object, big.Objects[i].Object) {
			t.Fatalf("object %d differs after a round trip (types included):\n got %#v\nwant %#v", i, got.Objects[i].Object, big.Objects[i].Object)
		}
	}
	if p.size() > 100*600/4 {
		t.Errorf("100 objects of ~600 B packed into %d B, want under a quarter of their JSON", p.size())
	}
}
