package render

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// renderClasses are the error classes Render may return.
var renderClasses = []error{ErrOutsideRoot, ErrTooLarge, errInvalidYAML, errInvalidObject, errDuplicate,
	errNotFound, errRemoteDisabled, errKustomize}

// checkRenderOutcome asserts what holds for any Render result: nil result on
// error, a typed error, valid objects on success, the same digest twice, and
// nothing from outside the root.
func checkRenderOutcome(t *testing.T, root string, got *Rendered, err error) {
	t.Helper()
	if err != nil {
		if got != nil {
			t.Fatalf("Render returned objects with error %v", err)
		}
		var re *Error
		if !errors.As(err, &re) {
			t.Fatalf("error %v (%T) is not an *Error", err, err)
		}
		classified := false
		for _, c := range renderClasses {
			classified = classified || errors.Is(err, c)
		}
		if !classified {
			t.Fatalf("error %v has no class", err)
		}
		return
	}
	for _, o := range got.Objects {
		if o.GetAPIVersion() == "" || o.GetKind() == "" || o.GetName() == "" {
			t.Fatalf("object without apiVersion, kind or name: %v", o.Object)
		}
		_ = o.DeepCopy() // panics on values that are not JSON-compatible
		b, _ := json.Marshal(o.Object)
		if strings.Contains(string(b), "TOPSECRET") {
			t.Fatalf("rendered content from outside the root: %s", b)
		}
	}
	again, err := Render(context.Background(), root, ".", DefaultOptions())
	if err != nil || again.Digest != got.Digest {
		t.Fatalf("second render = %v, %v; want digest %s", again, err, got.Digest)
	}
}

// fuzzTree makes a repo/ directory next to an outside/ directory holding a
// manifest that must never be rendered.
func fuzzTree(t *testing.T) (dir, repo string) {
	dir = t.TempDir()
	repo = filepath.Join(dir, "repo")
	writeTree(t, dir, map[string]string{
		"outside/secret.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: secret}\ndata: {k: TOPSECRET}\n",
		"outside/kustomization.yaml": kustomizeHeader + "resources: [secret.yaml]\n",
		"repo/.keep":                 "",
	})
	return dir, repo
}

func FuzzRender(f *testing.F) {
	f.Add([]byte(configMap("a")+"---\n"+configMap("b")), false)
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n"), false)
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j"}}`), true)
	f.Add([]byte(aliasBomb(3)), false)
	f.Add([]byte("a: &a [*a]\n"), false)
	f.Add([]byte("--- # c\n---\n...\n"), false)
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 1}\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, asJSON bool) {
		_, repo := fuzzTree(t)
		name := "m.yaml"
		if asJSON {
			name = "m.json"
		}
		if err := os.WriteFile(filepath.Join(repo, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := Render(context.Background(), repo, ".", DefaultOptions())
		checkRenderOutcome(t, repo, got, err)
	})
}

func FuzzRenderKustomize(f *testing.F) {
	f.Add([]byte(kustomizeHeader+"resources: [r.yaml]\nnamePrefix: p-\n"), []byte(configMap("a")))
	f.Add([]byte(kustomizeHeader+"resources: [../outside]\n"), []byte(configMap("a")))
	f.Add([]byte(kustomizeHeader+"configMapGenerator:\n- name: g\n  files: [r.yaml]\n"), []byte("x"))
	f.Add([]byte(kustomizeHeader+"resources: [r.yaml]\npatches:\n- path: r.yaml\n"), []byte(configMap("a")))
	f.Add([]byte(kustomizeHeader+"resources: [r.yaml]\npatches:\n- patch: |\n    - op: add\n      path: /x\n      value: 1\n  target: {kind: ConfigMap}\n"),
		[]byte(configMap("a")))
	f.Add([]byte("resources:\n- https://example.com/x.yaml\n"), []byte{})
	f.Fuzz(func(t *testing.T, kustomization, resource []byte) {
		_, repo := fuzzTree(t)
		writeTree(t, repo, map[string]string{"kustomization.yaml": string(kustomization), "r.yaml": string(resource)})
		got, err := Render(context.Background(), repo, ".", DefaultOptions())
		checkRenderOutcome(t, repo, got, err)
	})
}
