package diff_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite testdata fixtures captured from the test apiserver")

// fastPathFixtures are the objects of testdata/fastpath: each file holds the
// desired object and the live object the test apiserver made of it after a
// server-side apply as gitsync.
var fastPathFixtures = []struct{ name, manifest string }{
	{"configmap", configMap},
	{"deployment", deployment},
	{"deployment-generated", generatedDeployment},
	{"service", service},
	{"secret", secret},
}

// TestCaptureFixtures rewrites testdata/fastpath from the real apiserver when
// run with -update; otherwise it checks the fixtures exist.
func TestCaptureFixtures(t *testing.T) {
	for _, f := range fastPathFixtures {
		path := filepath.Join("testdata", "fastpath", f.name+".yaml")
		if !*update {
			if _, err := os.Stat(path); err != nil {
				t.Errorf("fixture missing (run go test ./diff/ -run TestCaptureFixtures -update): %v", err)
			}
			continue
		}
		ns := env.Namespace(t)
		desired := decode(t, f.manifest, ns)
		live := applyAs(t, desired, "gitsync")
		var docs []string
		for _, obj := range []*unstructured.Unstructured{desired, live} {
			b, err := yaml.Marshal(obj.Object)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, strings.ReplaceAll(string(b), ns, "demo"))
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// loadPair reads a desired/live fixture pair.
func loadPair(t testing.TB, name string) (desired, live *unstructured.Unstructured) {
	t.Helper()
	objs := loadObjects(t, filepath.Join("testdata", "fastpath", name+".yaml"))
	if len(objs) != 2 {
		t.Fatalf("fixture %s: %d objects, want desired and live", name, len(objs))
	}
	return objs[0], objs[1]
}

// loadObjects reads the YAML documents of a fixture file; an empty document
// yields nil.
func loadObjects(t testing.TB, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(b), "---\n") {
		if strings.TrimSpace(doc) == "" || strings.TrimSpace(doc) == "null" {
			out = append(out, nil)
			continue
		}
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, u)
	}
	return out
}
