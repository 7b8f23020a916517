package render

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/internal/testcharts"
	"gitsync.dev/gitsync/source/postrender"
)

const postRenderDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook-guestbook
  labels: {app.kubernetes.io/name: guestbook}
spec:
  replicas: 1
  selector:
    matchLabels: {app.kubernetes.io/name: guestbook}
  template:
    metadata:
      labels: {app.kubernetes.io/name: guestbook}
    spec:
      containers:
      - name: web
        image: nginx:1.27
`

const postRenderService = `apiVersion: v1
kind: Service
metadata:
  name: guestbook-guestbook
spec:
  ports: [{port: 80}]
  selector: {app.kubernetes.io/name: guestbook}
`

// postRenderSources are one Deployment and Service named alike, rendered
// by each kind of source: plain YAML, a kustomize overlay, a Helm chart.
func postRenderSources() map[string]map[string]string {
	chart := testcharts.GuestbookChart("chart")
	return map[string]map[string]string{
		"plain": {"plain/deploy.yaml": postRenderDeployment, "plain/svc.yaml": postRenderService},
		"kustomize": {
			"base/kustomization.yaml":      "resources: [deploy.yaml, svc.yaml]\n",
			"base/deploy.yaml":             postRenderDeployment,
			"base/svc.yaml":                postRenderService,
			"kustomize/kustomization.yaml": "resources: [../base]\nnamePrefix: \"\"\n",
		},
		"chart": chart,
	}
}

func renderWith(t *testing.T, files map[string]string, path string, pr postrender.Options) (*Rendered, error) {
	t.Helper()
	return Render(context.Background(), writeRepo(t, files), path, Options{Settings: Settings{PostRender: pr}})
}

func byKind(t *testing.T, r *Rendered, kind string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range r.Objects {
		if o.GetKind() == kind {
			return o
		}
	}
	t.Fatalf("no %s rendered", kind)
	return nil
}

func TestPostRenderEverySource(t *testing.T) {
	changes := postrender.Options{
		Patches: []postrender.Patch{
			{Target: &postrender.Selector{Kind: "Deployment"},
				Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        env: [{name: MODE, value: patched}]\n"},
			{Target: &postrender.Selector{Kind: "Deployment", Name: "guestbook-.*"},
				Patch: `[{"op":"replace","path":"/spec/replicas","value":4}]`},
		},
		Images:      []postrender.Image{{Name: "nginx", NewName: "mirror.example/nginx", NewTag: "1.27.1"}},
		Labels:      map[string]string{"team": "a"},
		Annotations: map[string]string{"owner": "platform"},
	}
	for name, files := range postRenderSources() {
		t.Run(name, func(t *testing.T) {
			plain, err := renderWith(t, files, name, postrender.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := renderWith(t, files, name, changes)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Objects) != len(plain.Objects) || r.Digest == plain.Digest {
				t.Errorf("%d objects (digest %s), without changes %d (%s)", len(r.Objects), r.Digest, len(plain.Objects), plain.Digest)
			}
			d := byKind(t, r, "Deployment")
			if n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); n != 4 {
				t.Errorf("replicas = %d, want 4 (the JSON 6902 patch)", n)
			}
			cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
			c := cs[0].(map[string]any)
			if c["image"] != "mirror.example/nginx:1.27.1" {
				t.Errorf("image = %v, want the override", c["image"])
			}
			if diff := cmp.Diff([]any{map[string]any{"name": "MODE", "value": "patched"}}, c["env"]); diff != "" {
				t.Errorf("env from the strategic-merge patch (-want +got):\n%s", diff)
			}
			for _, o := range r.Objects {
				if o.GetLabels()["team"] != "a" || o.GetAnnotations()["owner"] != "platform" {
					t.Errorf("%s/%s: labels %v, annotations %v", o.GetKind(), o.GetName(), o.GetLabels(), o.GetAnnotations())
				}
			}
			sel, _, _ := unstructured.NestedStringMap(byKind(t, r, "Service").Object, "spec", "selector")
			if _, ok := sel["team"]; ok {
				t.Errorf("Service selector got the common label: %v", sel)
			}
			tl, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
			if _, ok := tl["team"]; ok {
				t.Errorf("pod template got the common label: %v", tl)
			}
		})
	}
}

func TestPostRenderFailureRendersNothing(t *testing.T) {
	for name, files := range postRenderSources() {
		t.Run(name, func(t *testing.T) {
			r, err := renderWith(t, files, name, postrender.Options{Patches: []postrender.Patch{
				{Target: &postrender.Selector{Kind: "Service"}, Patch: `[{"op":"add","path":"/metadata/labels","value":{}}]`},
				{Target: &postrender.Selector{Kind: "Deployment", Name: "web"}, Patch: `[{"op":"remove","path":"/spec/replicas"}]`},
			}})
			var re *Error
			if r != nil || !errors.As(err, &re) || !errors.Is(err, errPostRender) {
				t.Fatalf("Render = %v, %v; want nothing and a post-render *Error", r, err)
			}
			for _, want := range []string{name + ": post-render changes failed: spec.patches[1]: its target kind=Deployment,name=web matches no rendered object"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q\nwant it to contain %q", err, want)
				}
			}
		})
	}
}

func TestPostRenderNeedsTheEngine(t *testing.T) {
	files := postRenderSources()["plain"]
	repo := writeRepo(t, files)
	if _, err := Render(context.Background(), repo, "plain", Options{PlainOnly: true}); err != nil {
		t.Fatalf("plain render in process: %v", err)
	}
	_, err := Render(context.Background(), repo, "plain", Options{PlainOnly: true,
		Settings: Settings{PostRender: postrender.Options{Labels: map[string]string{"a": "b"}}}})
	if !errors.Is(err, ErrNeedsEngine) {
		t.Fatalf("a plain path with post-render changes rendered in process: %v", err)
	}
}

func TestPostRenderRenameCollides(t *testing.T) {
	files := maps.Clone(postRenderSources()["plain"])
	files["plain/other.yaml"] = strings.Replace(postRenderDeployment, "name: guestbook-guestbook", "name: other", 1)
	_, err := renderWith(t, files, "plain", postrender.Options{Patches: []postrender.Patch{{
		Target: &postrender.Selector{Kind: "Deployment", Name: "other"},
		Patch:  `[{"op":"replace","path":"/metadata/name","value":"guestbook-guestbook"}]`,
	}}})
	if !errors.Is(err, errDuplicate) {
		t.Fatalf("Render = %v, want a duplicate object once renamed", err)
	}
}

func TestPostRenderKey(t *testing.T) {
	none := Settings{}
	a := Settings{PostRender: postrender.Options{Images: []postrender.Image{{Name: "nginx", NewTag: "1"}}}}
	b := Settings{PostRender: postrender.Options{Images: []postrender.Image{{Name: "nginx", NewTag: "2"}}}}
	if none.PostRenderKey() != "" || a.PostRenderKey() == "" || a.PostRenderKey() == b.PostRenderKey() {
		t.Errorf("keys %q %q %q", none.PostRenderKey(), a.PostRenderKey(), b.PostRenderKey())
	}
}
