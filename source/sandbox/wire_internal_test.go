package sandbox

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/render"
)

// TestRequestCarriesCapabilities: the target cluster's capabilities reach
// the render child whole, with the rest of the Helm options.
func TestRequestCarriesCapabilities(t *testing.T) {
	h := helm.DefaultOptions()
	h.ReleaseName = "web"
	h.Capabilities = helm.Capabilities{KubeVersion: "v1.33.2+k3s1", APIVersions: []string{"apps/v1", "apps/v1/Deployment", "v1"}}
	h.Values = map[string]any{"replicas": int64(2)}
	b, err := request{Root: "/r", Path: "chart", Options: render.Options{Settings: render.Settings{Helm: &h}}}.encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRequest(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(h, *got.Options.Settings.Helm); diff != "" {
		t.Errorf("Helm options in the child (-want +got):\n%s", diff)
	}
}

// TestAnswerCarriesOrigins: the objects' origins (gitsync trace) come back
// from the child beside the objects, in order, and a render without any
// comes back without any.
func TestAnswerCarriesOrigins(t *testing.T) {
	cm := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}}}
	}
	for _, origins := range [][]string{{"a.yaml:1: document 1", "b.yaml:3: document 2"}, nil} {
		var buf bytes.Buffer
		in := &render.Rendered{Objects: []*unstructured.Unstructured{cm("a"), cm("b")}, Digest: "sha256:x", Origins: origins}
		if err := writeAnswer(&buf, in, nil); err != nil {
			t.Fatal(err)
		}
		out, renderErr, err := readAnswer(&buf)
		if err != nil || renderErr != nil {
			t.Fatal(err, renderErr)
		}
		if diff := cmp.Diff(origins, out.Origins); diff != "" || len(out.Objects) != 2 {
			t.Errorf("origins through the wire (-want +got):\n%s", diff)
		}
	}
}
