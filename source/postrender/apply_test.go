package postrender_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/postrender"
)

const objectsYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apps
  labels: {app: web}
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      initContainers:
      - name: init
        image: busybox:1.36
      containers:
      - name: web
        image: nginx:1.25
      - name: sidecar
        image: envoy:v1
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
  namespace: apps
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: job
            image: nginx:1.25
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
  namespace: apps
spec:
  containers:
  - name: c
    image: nginx
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: apps
stringData:
  password: hunter2-the-secret
`

func objects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(objectsYAML, "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		fixInts(m)
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

// fixInts makes sigs.k8s.io/yaml's float64 numbers int64, as the render's
// decoder gives them.
func fixInts(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = fixInts(e)
		}
	case []any:
		for i, e := range v {
			v[i] = fixInts(e)
		}
	case float64:
		return int64(v)
	}
	return v
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	t.Fatalf("no %s in the output", kind)
	return nil
}

func str(t *testing.T, o *unstructured.Unstructured, path ...string) string {
	t.Helper()
	v, _, err := unstructured.NestedFieldNoCopy(o.Object, path...)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := v.(string)
	return s
}

func containerImages(t *testing.T, o *unstructured.Unstructured, path ...string) []string {
	t.Helper()
	list, _, err := unstructured.NestedSlice(o.Object, path...)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range list {
		out = append(out, c.(map[string]any)["image"].(string))
	}
	return out
}

func apply(t *testing.T, o postrender.Options) []*unstructured.Unstructured {
	t.Helper()
	out, err := postrender.Apply(objects(t), o, budget.New(budget.DefaultLimits()))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStrategicMergePatchWithTarget(t *testing.T) {
	out := apply(t, postrender.Options{Patches: []postrender.Patch{{
		Target: &postrender.Selector{Kind: "Deployment", Name: "web"},
		Patch: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"any"},
		  "spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"web","resources":{"limits":{"memory":"64Mi"}}}]}}}}`,
	}}})
	d := find(t, out, "Deployment")
	if got, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); got != 3 {
		t.Errorf("replicas = %d, want 3 (int64)", got)
	}
	if got := containerImages(t, d, "spec", "template", "spec", "containers"); !cmp.Equal(got, []string{"nginx:1.25", "envoy:v1"}) {
		t.Errorf("containers merged by name: images %v", got)
	}
	if d.GetName() != "web" {
		t.Errorf("name = %s: a patch's own name does not rename its target", d.GetName())
	}
}

func TestStrategicMergePatchNamesItsObject(t *testing.T) {
	out := apply(t, postrender.Options{Patches: []postrender.Patch{{
		Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: apps\nspec:\n  replicas: 5\n",
	}}})
	if got, _, _ := unstructured.NestedInt64(find(t, out, "Deployment").Object, "spec", "replicas"); got != 5 {
		t.Errorf("replicas = %d, want 5", got)
	}
}

func TestStrategicMergePatchDeletes(t *testing.T) {
	out := apply(t, postrender.Options{Patches: []postrender.Patch{{
		Patch: "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: nightly\n  namespace: apps\n$patch: delete\n",
	}}})
	for _, o := range out {
		if o.GetKind() == "CronJob" {
			t.Fatal("CronJob still rendered after $patch: delete")
		}
	}
	if len(out) != 3 {
		t.Errorf("%d objects, want 3", len(out))
	}
}

func TestJSON6902Patch(t *testing.T) {
	out := apply(t, postrender.Options{Patches: []postrender.Patch{{
		Target: &postrender.Selector{Group: "apps", Kind: "Deployment", LabelSelector: "app=web"},
		Patch:  "- op: replace\n  path: /spec/replicas\n  value: 2\n- op: add\n  path: /metadata/annotations\n  value: {team: a}\n",
	}}})
	d := find(t, out, "Deployment")
	if got, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); got != 2 {
		t.Errorf("replicas = %d, want 2", got)
	}
	if d.GetAnnotations()["team"] != "a" {
		t.Errorf("annotations %v", d.GetAnnotations())
	}
}

func TestImages(t *testing.T) {
	out := apply(t, postrender.Options{Images: []postrender.Image{
		{Name: "nginx", NewName: "registry.example/nginx", NewTag: "1.27"},
		{Name: "busybox", Digest: "sha256:" + strings.Repeat("a", 64)},
	}})
	d := find(t, out, "Deployment")
	if got := containerImages(t, d, "spec", "template", "spec", "containers"); !cmp.Equal(got, []string{"registry.example/nginx:1.27", "envoy:v1"}) {
		t.Errorf("Deployment containers %v", got)
	}
	if got := containerImages(t, d, "spec", "template", "spec", "initContainers"); !cmp.Equal(got, []string{"busybox@sha256:" + strings.Repeat("a", 64)}) {
		t.Errorf("Deployment initContainers %v", got)
	}
	if got := containerImages(t, find(t, out, "CronJob"), "spec", "jobTemplate", "spec", "template", "spec", "containers"); !cmp.Equal(got, []string{"registry.example/nginx:1.27"}) {
		t.Errorf("CronJob containers %v", got)
	}
	if got := containerImages(t, find(t, out, "Widget"), "spec", "containers"); !cmp.Equal(got, []string{"registry.example/nginx:1.27"}) {
		t.Errorf("custom resource containers %v", got)
	}
}

func TestCommonMetadataLeavesSelectorsAndTemplates(t *testing.T) {
	out := apply(t, postrender.Options{Labels: map[string]string{"team": "a", "app": "override"},
		Annotations: map[string]string{"owner": "platform"}})
	for _, o := range out {
		if o.GetLabels()["team"] != "a" || o.GetAnnotations()["owner"] != "platform" {
			t.Errorf("%s: labels %v annotations %v", o.GetKind(), o.GetLabels(), o.GetAnnotations())
		}
	}
	d := find(t, out, "Deployment")
	if d.GetLabels()["app"] != "override" {
		t.Errorf("a common label wins over the object's: %v", d.GetLabels())
	}
	if got := str(t, d, "spec", "selector", "matchLabels", "app"); got != "web" {
		t.Errorf("selector changed to %q", got)
	}
	tl, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
	if !cmp.Equal(tl, map[string]string{"app": "web"}) {
		t.Errorf("pod template labels changed: %v", tl)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "template", "metadata", "annotations"); found {
		t.Error("pod template got annotations (a rollout of every workload)")
	}
}

func TestApplyLeavesItsInputAlone(t *testing.T) {
	in := objects(t)
	before := in[0].DeepCopy()
	if _, err := postrender.Apply(in, postrender.Options{Labels: map[string]string{"x": "y"},
		Images: []postrender.Image{{Name: "nginx", NewTag: "2"}}}, budget.New(budget.DefaultLimits())); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before.Object, in[0].Object); diff != "" {
		t.Errorf("input changed (-before +after):\n%s", diff)
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		patch postrender.Patch
		want  string
	}{
		{"target matches nothing",
			postrender.Patch{Target: &postrender.Selector{Kind: "Deployment", Name: "api"}, Patch: `[{"op":"remove","path":"/spec/replicas"}]`},
			"spec.patches[1]: its target kind=Deployment,name=api matches no rendered object"},
		{"named object missing",
			postrender.Patch{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 5\n"},
			"spec.patches[1]: the object it names (apiVersion, kind, metadata.name and metadata.namespace) matches no rendered object"},
		{"JSON patch without target",
			postrender.Patch{Patch: `[{"op":"remove","path":"/spec/replicas"}]`},
			"spec.patches[1]: a JSON 6902 patch needs a target"},
		{"operation fails",
			postrender.Patch{Target: &postrender.Selector{Kind: "CronJob"}, Patch: `[{"op":"replace","path":"/spec/nothing/here","value":1}]`},
			"spec.patches[1]: could not be applied to CronJob/nightly: "},
		{"not a patch",
			postrender.Patch{Target: &postrender.Selector{Kind: "CronJob"}, Patch: "just words"},
			"spec.patches[1]: is not a strategic-merge patch"},
		{"bad selector",
			postrender.Patch{Target: &postrender.Selector{LabelSelector: "a in in"}, Patch: `[]`},
			"spec.patches[1]: target labelSelector=a in in is not a valid selector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok := postrender.Patch{Target: &postrender.Selector{Kind: "Widget"}, Patch: `[{"op":"add","path":"/spec/x","value":1}]`}
			out, err := postrender.Apply(objects(t), postrender.Options{Patches: []postrender.Patch{ok, tc.patch}}, budget.New(budget.DefaultLimits()))
			var pe *postrender.Error
			if !errors.As(err, &pe) || out != nil {
				t.Fatalf("Apply = %d objects, %v; want no objects and a *postrender.Error", len(out), err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestOptionalTargetMatchingNothing(t *testing.T) {
	out := apply(t, postrender.Options{Patches: []postrender.Patch{{Optional: true,
		Target: &postrender.Selector{Kind: "Deployment", Name: "api"}, Patch: `[{"op":"remove","path":"/spec/replicas"}]`}}})
	if len(out) != 4 {
		t.Errorf("%d objects, want 4", len(out))
	}
}

func TestAFailedPatchOnASecretQuotesNothing(t *testing.T) {
	_, err := postrender.Apply(objects(t), postrender.Options{Patches: []postrender.Patch{{
		Target: &postrender.Selector{Kind: "Secret"},
		Patch:  `[{"op":"test","path":"/stringData/password","value":"guess"}]`,
	}}}, budget.New(budget.DefaultLimits()))
	if err == nil {
		t.Fatal("a failed test operation applied")
	}
	if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "withheld") {
		t.Errorf("error %q: want kustomize's message withheld", err)
	}
}

// TestApplyIsBudgeted: a JSON 6902 patch whose copies could grow an object
// past the output budget is refused before it runs, naming the patch.
//
// Checked by dropping checkGrowth: the patch runs (4,096 copies of the
// object) and only encoding the result meets the budget, naming no patch.
func TestApplyIsBudgeted(t *testing.T) {
	// Each copy may double the object: 12 of them, 4,096 times its size.
	ops := []string{`{"op":"add","path":"/spec/a","value":"` + strings.Repeat("x", 1024) + `"}`}
	for i := range 12 {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/spec","path":"/spec/b%d"}`, i))
	}
	limits := budget.DefaultLimits()
	limits.OutputBytes = 1 << 20
	_, err := postrender.Apply(objects(t), postrender.Options{Patches: []postrender.Patch{{
		Target: &postrender.Selector{Kind: "Widget"}, Patch: "[" + strings.Join(ops, ",") + "]",
	}}}, budget.New(limits))
	var be *budget.ExceededError
	if !errors.As(err, &be) || be.Stage != budget.StagePostRender || !strings.HasPrefix(err.Error(), "spec.patches[0]: ") {
		t.Fatalf("Apply = %v, want spec.patches[0] refused for the post-render budget", err)
	}
}

func TestDigest(t *testing.T) {
	a := postrender.Options{Labels: map[string]string{"a": "1", "b": "2"}}
	b := postrender.Options{Labels: map[string]string{"b": "2", "a": "1"}}
	c := postrender.Options{Labels: map[string]string{"a": "1", "b": "3"}}
	if a.Digest() != b.Digest() || a.Digest() == c.Digest() || (postrender.Options{}).Digest() != "" {
		t.Errorf("digests %q %q %q %q", a.Digest(), b.Digest(), c.Digest(), (postrender.Options{}).Digest())
	}
}

func TestPatchesMayNotUseAliases(t *testing.T) {
	_, err := postrender.Apply(objects(t), postrender.Options{Patches: []postrender.Patch{{
		Target: &postrender.Selector{Kind: "Widget"},
		Patch:  "a: &a [x, x, x]\nb: [*a, *a, *a]\n",
	}}}, budget.New(budget.DefaultLimits()))
	if err == nil || !strings.Contains(err.Error(), "spec.patches[0]: uses YAML anchors or aliases") {
		t.Fatalf("Apply = %v, want the aliases refused", err)
	}
}

// TestApplyChargesOnlyGrowth: the render charged its objects already; a
// change is charged what it adds, so a render near its budget can still
// take a label.
//
// Checked by charging every output byte: the label then passes the limit.
func TestApplyChargesOnlyGrowth(t *testing.T) {
	objs := objects(t)
	var rendered int64
	for _, o := range objs {
		b, _ := o.MarshalJSON()
		rendered += int64(len(b))
	}
	limits := budget.DefaultLimits()
	limits.OutputBytes = rendered + 256
	b := budget.New(limits)
	if err := b.Charge(budget.StagePlain, rendered); err != nil {
		t.Fatal(err)
	}
	if _, err := postrender.Apply(objs, postrender.Options{Labels: map[string]string{"team": "a"}}, b); err != nil {
		t.Fatalf("a label on a render near its budget: %v", err)
	}
	if rendered < 256 {
		t.Fatalf("the objects are %d bytes: too small to tell growth from the whole", rendered)
	}
	if _, err := postrender.Apply(objs, postrender.Options{Annotations: map[string]string{"big": strings.Repeat("x", 512)}}, b); err == nil {
		t.Error("an annotation of 512 bytes on every object passed a budget 256 bytes above the render")
	}
}

// TestApplyAcrossChunks: a render of more objects than one resource map
// holds is changed as one: a target selecting objects of every chunk, a
// strategic-merge patch naming the last object, and one of two documents
// naming objects of different chunks.
func TestApplyAcrossChunks(t *testing.T) {
	var objs []*unstructured.Unstructured
	for i := range 700 {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("cm-%03d", i), "namespace": "apps"}, "data": map[string]any{"v": "0"}}})
	}
	cm := func(name, v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: apps\ndata:\n  v: \"" + v + "\"\n"
	}
	out, err := postrender.Apply(objs, postrender.Options{Labels: map[string]string{"team": "a"}, Patches: []postrender.Patch{
		{Target: &postrender.Selector{Kind: "ConfigMap", Name: "cm-.*9"}, Patch: `[{"op":"replace","path":"/data/v","value":"9"}]`},
		{Patch: cm("cm-699", "last")},
		{Patch: cm("cm-001", "first") + "---\n" + cm("cm-600", "third chunk")},
	}}, budget.New(budget.DefaultLimits()))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 700 {
		t.Fatalf("%d objects, want 700", len(out))
	}
	want := map[string]string{"cm-009": "9", "cm-259": "9", "cm-689": "9", "cm-699": "last", "cm-001": "first", "cm-600": "third chunk", "cm-000": "0", "cm-300": "0"}
	for i, o := range out {
		if o.GetName() != fmt.Sprintf("cm-%03d", i) || o.GetLabels()["team"] != "a" {
			t.Fatalf("object %d: %s with labels %v", i, o.GetName(), o.GetLabels())
		}
		if w, ok := want[o.GetName()]; ok {
			if got, _, _ := unstructured.NestedString(o.Object, "data", "v"); got != w {
				t.Errorf("%s: v = %q, want %q", o.GetName(), got, w)
			}
		}
	}
}
