package main

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/internal/testcharts"
)

const postRenderFile = `patches:
- target: {kind: Deployment}
  patch: |
    - op: replace
      path: /spec/replicas
      value: 4
- patch: |
    apiVersion: v1
    kind: Service
    metadata:
      name: guestbook-guestbook
      namespace: default
    spec:
      type: NodePort
images:
- name: nginx
  newName: mirror.example/nginx
  newTag: "1.27.1"
commonMetadata:
  labels: {team: shop}
`

// TestBuildPostRender: build of a chart directory with --post-render makes
// the file's patches (JSON 6902 and strategic merge), images and common
// labels on the chart's output, in the render child like any chart; a
// patch whose target matches nothing exits 2 naming it and prints nothing.
//
// Checked by dropping the file from renderFlags.settings: the chart's own
// output is printed (1 replica, ClusterIP, nginx:1.27, no team label).
func TestBuildPostRender(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, testcharts.GuestbookChart("chart"))
	file := filepath.Join(dir, "changes.yaml")
	writeFiles(t, dir, map[string]string{"changes.yaml": postRenderFile})

	r := gitsync(t, "build", filepath.Join(dir, "chart"), "-n", "default", "--post-render", file, "-o", outputJSON)
	wantCode(t, r, 0)
	for _, obj := range builtObjects(t, r.stdout, outputJSON) {
		if obj.GetLabels()["team"] != "shop" {
			t.Errorf("%s/%s: labels %v, want team=shop", obj.GetKind(), obj.GetName(), obj.GetLabels())
		}
		switch obj.GetKind() {
		case "Deployment":
			if n, _, _ := unstructured.NestedFloat64(obj.Object, "spec", "replicas"); n != 4 {
				t.Errorf("Deployment replicas %v, want 4", n)
			}
			cs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
			if img := cs[0].(map[string]any)["image"]; img != "mirror.example/nginx:1.27.1" {
				t.Errorf("image %v, want the override", img)
			}
		case "Service":
			if typ, _, _ := unstructured.NestedString(obj.Object, "spec", "type"); typ != "NodePort" {
				t.Errorf("Service type %q, want NodePort", typ)
			}
		}
	}

	writeFiles(t, dir, map[string]string{"changes.yaml": strings.Replace(postRenderFile, "{kind: Deployment}", "{kind: Deployment, name: api}", 1)})
	bad := gitsync(t, "build", filepath.Join(dir, "chart"), "-n", "default", "--post-render", file)
	wantCode(t, bad, 2)
	if bad.stdout != "" || !strings.Contains(bad.stderr, "spec.patches[0]: its target kind=Deployment,name=api matches no rendered object") {
		t.Errorf("want nothing printed and the patch named:\n%s", bad)
	}

	writeFiles(t, dir, map[string]string{"changes.yaml": "patch: []\n"})
	if r := gitsync(t, "build", filepath.Join(dir, "chart"), "--post-render", file); r.code != 2 || !strings.Contains(r.stderr, "want patches, images and commonMetadata") {
		t.Errorf("a file of the wrong shape: want exit 2 saying what it holds:\n%s", r)
	}
}
