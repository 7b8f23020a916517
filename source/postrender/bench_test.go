package postrender_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/postrender"
)

// BenchmarkApply: a label, an image override and one targeted JSON patch
// over 100 and 1,000 Deployments, the cost a changed render adds (linear
// in the objects, since they go into resource maps of chunkSize).
func BenchmarkApply(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchmarkApply(b, n) })
	}
}

func benchmarkApply(b *testing.B, n int) {
	objs := make([]*unstructured.Unstructured, n)
	for i := range objs {
		objs[i] = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": fmt.Sprintf("d%d", i), "namespace": "apps", "labels": map[string]any{"app": "x"}},
			"spec": map[string]any{"replicas": int64(1), "template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "web", "image": "nginx:1.25"}}}}},
		}}
	}
	o := postrender.Options{Labels: map[string]string{"team": "a"}, Images: []postrender.Image{{Name: "nginx", NewTag: "1.27"}},
		Patches: []postrender.Patch{{Target: &postrender.Selector{Kind: "Deployment", Name: "d1.*"}, Patch: `[{"op":"replace","path":"/spec/replicas","value":2}]`}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := postrender.Apply(objs, o, budget.New(budget.Limits{OutputBytes: 1 << 30})); err != nil {
			b.Fatal(err)
		}
	}
}
