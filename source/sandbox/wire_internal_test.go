package sandbox

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

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
