package bench

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/livecache"
)

// BenchmarkCachedObjectBytes: the heap one cached object holds, as the
// informer decodes it and after the agent's cache transform
// (livecache.CompactLive). The objects are the agent-scale benchmark's
// ConfigMaps as the apiserver returns them after gitsync's apply: 20,000 of
// them, 100 per GitSync (namespace), heap measured after a GC.
//
//	go test ./bench -run '^$' -bench BenchmarkCachedObjectBytes -benchtime 1x
func BenchmarkCachedObjectBytes(b *testing.B) {
	const n = 20000
	raw := make([][]byte, n)
	for i := range raw {
		raw[i] = liveScaleConfigMap(i)
	}
	for _, tc := range []struct {
		name      string
		transform func(*unstructured.Unstructured)
	}{
		{"decoded", func(*unstructured.Unstructured) {}},
		{"compact", func(u *unstructured.Unstructured) { _, _ = livecache.CompactLive(u) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				before := heapAlloc()
				objs := make([]*unstructured.Unstructured, n)
				for i := range objs {
					u := &unstructured.Unstructured{}
					if err := u.UnmarshalJSON(raw[i]); err != nil {
						b.Fatal(err)
					}
					tc.transform(u)
					objs[i] = u
				}
				b.ReportMetric(float64(heapAlloc()-before)/n, "B/object")
				runtime.KeepAlive(objs)
			}
		})
	}
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// liveScaleConfigMap is ConfigMap i of the scale benchmark as read back
// from the apiserver: server metadata, the owner labels and gitsync's
// managedFields entry.
func liveScaleConfigMap(i int) []byte {
	repo := i / 100
	return []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-%03d-%03d","namespace":"scale-c4-abcd-%03d",`+
		`"uid":"6f1c2a3e-1d2b-4c5d-8e9f-%012d","resourceVersion":"%d","creationTimestamp":"2026-11-30T18:09:09Z",`+
		`"labels":{"app.kubernetes.io/name":"app-%03d","app.kubernetes.io/part-of":"scale","gitsync.dev/name":"app","gitsync.dev/namespace":"scale-c4-abcd-%03d"},`+
		`"managedFields":[{"manager":"gitsync","operation":"Apply","apiVersion":"v1","time":"2026-11-30T18:09:09Z","fieldsType":"FieldsV1",`+
		`"fieldsV1":{"f:data":{"f:index":{},"f:settings.yaml":{}},"f:metadata":{"f:labels":{"f:app.kubernetes.io/name":{},"f:app.kubernetes.io/part-of":{},"f:gitsync.dev/name":{},"f:gitsync.dev/namespace":{}}}}}]},`+
		`"data":{"index":"%d","settings.yaml":"replicas: 3\nlog: info\npayload: %s\n"}}`,
		repo, i%100, repo, i, 1000+i, repo, repo, i%100, strings.Repeat("x", 512)))
}
