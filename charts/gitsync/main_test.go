package chart_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/internal/testenv"
	"gitsync.dev/gitsync/object"
	sourcerender "gitsync.dev/gitsync/source/render"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{}, &env))
}

// helm runs the helm binary hack/tools/build.sh builds (make testbin) in the
// chart directory and returns its combined output and error.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	dir, err := testenv.BinDir("helm")
	if err != nil {
		t.Skipf("helm is not built: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "helm"), args...)
	// Keep helm away from the user's repositories, plugins and caches.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// template renders the chart (CRDs included) as release in namespace ns with
// extra helm arguments, and decodes the result with gitsync's own renderer.
func template(t *testing.T, release, ns string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	out, err := helm(t, append([]string{"template", release, ".", "--namespace", ns, "--include-crds"}, args...)...)
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s", args, err, out)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "chart.yaml"), []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := sourcerender.Render(context.Background(), dir, "chart.yaml", sourcerender.DefaultOptions())
	if err != nil {
		t.Fatalf("decode rendered chart: %v", err)
	}
	return r.Objects
}

// install applies rendered objects server-side (CRDs first, then the rest)
// as an administrator, the way `helm install` would create them.
func install(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	a, err := apply.New(env.Config, nil, apply.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := a.Apply(ctx, objs)
	if err == nil {
		err = cs.Err()
	}
	if err != nil {
		t.Fatalf("apply rendered chart: %v", err)
	}
}

// wantSubjects fails unless objs are exactly want ("Kind/namespace/name").
func wantSubjects(t *testing.T, objs []*unstructured.Unstructured, want ...string) {
	t.Helper()
	got := make([]string, len(objs))
	for i, o := range objs {
		got[i] = object.IDOf(o).String()
	}
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rendered objects (-want +got):\n%s", diff)
	}
}

// find returns the rendered object of kind whose name ends with suffix.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s/%s rendered", kind, ns, name)
	return nil
}

// lines is a readable form of helm's output in failure messages.
func lines(out string) string { return "\t" + strings.ReplaceAll(strings.TrimSpace(out), "\n", "\n\t") }
