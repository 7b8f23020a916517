package render

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/internal/testcharts"
	"gitsync.dev/gitsync/internal/testenv"
	"gitsync.dev/gitsync/source/helm"
)

// helmTemplate runs the helm binary hack/tools/build.sh builds on the chart
// in dir and returns its output, every document as Helm prints it.
func helmTemplate(t *testing.T, dir, release, ns string) []byte {
	t.Helper()
	bin, err := testenv.BinDir("helm")
	if err != nil {
		t.Skipf("helm is not built: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "helm"), "template", release, dir, "--namespace", ns, "--include-crds")
	home := t.TempDir() // keep helm away from the user's repositories and caches
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	var stderr []byte
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = ee.Stderr
	}
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	return out
}

// byID indexes objects by "Kind/ns/name".
func byID(objs []*unstructured.Unstructured) map[string]map[string]any {
	out := make(map[string]map[string]any, len(objs))
	for i, o := range objs {
		out[subjects(objs)[i]] = o.Object
	}
	return out
}

// TestHelmRenderDecodesAsHelmTemplate: every test chart, rendered by
// gitsync, decodes to exactly the objects `helm template` prints, read the
// way kubectl reads a file (sigs.k8s.io/yaml per "---" document, nulls then
// read as the apiserver reads them on both sides): the same values,
// trailing newlines included. podinfo's redis.conf, a
// block scalar that ends its template with no newline after it, keeps its
// final newline, as Helm's output (and so `helm install`) has it.
//
// Checked by dropping the newline render.go's addTemplate appends to each
// document (Helm trims documents): redis.conf then lacks its final "\n"
// and differs from helm's, and the explicit check below fails.
func TestHelmRenderDecodesAsHelmTemplate(t *testing.T) {
	for _, name := range testcharts.Names() {
		t.Run(name, func(t *testing.T) {
			repo := writeRepo(t, testcharts.Files(name, "chart"))
			opts := DefaultOptions()
			h := helm.DefaultOptions()
			h.ReleaseName, h.Namespace = "web", "apps"
			opts.Settings.Helm = &h
			ours, err := Render(context.Background(), repo, "chart", opts)
			if err != nil {
				t.Fatal(err)
			}
			if name == testcharts.Podinfo {
				conf, _, _ := unstructured.NestedString(byID(ours.Objects)["ConfigMap/web-podinfo-redis"], "data", "redis.conf")
				want := "maxmemory 64mb\nmaxmemory-policy allkeys-lru\nsave \"\"\nappendonly no\n"
				if conf != want {
					t.Errorf("redis.conf = %q, want %q (its final newline kept)", conf, want)
				}
			}
			out := writeRepo(t, map[string]string{"out.yaml": string(helmTemplate(t, filepath.Join(repo, "chart"), "web", "apps"))})
			theirs, err := Render(context.Background(), out, "out.yaml", DefaultOptions())
			if err != nil {
				t.Fatalf("decode helm template's output: %v", err)
			}
			if diff := cmp.Diff(byID(theirs.Objects), byID(ours.Objects)); diff != "" {
				t.Errorf("gitsync's render differs from helm template's (-helm +gitsync):\n%s", diff)
			}
		})
	}
}
