package controller

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/redact"
)

// BenchmarkObjectsDigest is status.history's digest of 10,000 ConfigMaps
// (computed only when an entry is added), with a redactor of 10 values.
func BenchmarkObjectsDigest(b *testing.B) {
	objs := make([]*unstructured.Unstructured, 10_000)
	for i := range objs {
		objs[i] = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("cm-%05d", i), "namespace": "bench"},
			"data":     map[string]any{"key": fmt.Sprintf("value %d of a typical config map entry", i)},
		}}
	}
	red := redact.New()
	for i := range 10 {
		red.Add(fmt.Sprintf("secret-value-%d", i))
	}
	b.ResetTimer()
	for b.Loop() {
		if d := objectsDigest(objs, red); d == "" {
			b.Fatal("no digest")
		}
	}
}
