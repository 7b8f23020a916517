package render

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"gitsync.dev/gitsync/object"
)

// TestOrigins: with Options.Origins a render says where each object is
// defined: file, line and document of a plain directory (a List's item
// included), and the kustomization's directory for kustomize's output;
// without it, nothing (the agent's renders carry no origins).
func TestOrigins(t *testing.T) {
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
	}
	write("plain/a.yaml", cm("a")+"---\n"+cm("b"))
	write("plain/sub/list.yaml", "apiVersion: v1\nkind: List\nitems:\n- "+
		"apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: c\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: d\n")
	write("kust/kustomization.yaml", "resources:\n- cm.yaml\n")
	write("kust/cm.yaml", cm("k"))

	opts := DefaultOptions()
	opts.Origins = true
	got := map[string]string{}
	for _, path := range []string{"plain", "kust"} {
		r, err := Render(context.Background(), root, path, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Origins) != len(r.Objects) {
			t.Fatalf("%s: %d origins for %d objects", path, len(r.Origins), len(r.Objects))
		}
		for i, o := range r.Objects {
			got[object.IDOf(o).Name] = r.Origins[i]
		}
	}
	want := map[string]string{
		"a": "plain/a.yaml:1: document 1",
		"b": "plain/a.yaml:6: document 2",
		"c": "plain/sub/list.yaml:1: document 1 items[0]",
		"d": "plain/sub/list.yaml:1: document 1 items[1]",
		"k": "kust (kustomize output): document 1",
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("origin of %s: %q, want %q", name, got[name], w)
		}
	}

	r, err := Render(context.Background(), root, "plain", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if r.Origins != nil {
		t.Errorf("origins without Options.Origins: %v", r.Origins)
	}
}
