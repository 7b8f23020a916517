package render

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"
)

// manyObjects is one file of n small Pod documents, the shape of the
// hostile repository that decoded into 65,708 objects before the cap.
func manyObjects(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{apiVersion: v1,kind: Pod,metadata: {name: p%x}}\n---\n", i)
	}
	return b.String()
}

// manyItems is one List document of n Pods.
func manyItems(n int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	for i := range n {
		fmt.Fprintf(&b, "- {apiVersion: v1,kind: Pod,metadata: {name: p%x}}\n", i)
	}
	return b.String()
}

// TestRenderObjectCap: a render that would yield more objects than
// MaxObjects fails at the first document over the cap, as ErrTooLarge with
// an *ObjectLimitError naming the cap and the flag that raises it; a render
// at the cap succeeds. The budget is one per render, shared by plain files
// and the kustomizations below them.
//
// Checked by removing the countObjects calls in render_decode.go and
// kustomize.go: the 70,000-document, List and kustomize cases then render
// without error and fail here.
func TestRenderObjectCap(t *testing.T) {
	kustomization := "resources: [a.yaml]\n"
	tests := []struct {
		name  string
		files map[string]string
		path  string
		max   int
		// wantAt is where the refusal points, "" when the render succeeds.
		wantAt string
	}{
		{
			name:   "70,000 documents in one file, default cap",
			files:  map[string]string{"big.yaml": manyObjects(70_000)},
			path:   ".",
			wantAt: "big.yaml:20001: document 10001: more than 10000 objects",
		},
		{
			name:   "a List of 70,000 items",
			files:  map[string]string{"list.yaml": manyItems(70_000)},
			path:   "list.yaml",
			wantAt: "list.yaml:1: document 1: more than 10000 objects",
		},
		{
			name:  "exactly at the cap",
			files: map[string]string{"a.yaml": manyObjects(5)},
			path:  ".",
			max:   5,
		},
		{
			name:   "one over the cap",
			files:  map[string]string{"a.yaml": manyObjects(6)},
			path:   ".",
			max:    5,
			wantAt: "a.yaml:11: document 6: more than 5 objects",
		},
		{
			name:   "kustomize output over the cap",
			files:  map[string]string{"app/kustomization.yaml": kustomization, "app/a.yaml": manyObjects(6)},
			path:   "app",
			max:    5,
			wantAt: "app (kustomize output): more than 5 objects",
		},
		{
			name: "plain files and a nested kustomization share one budget",
			files: map[string]string{
				"plain.yaml":             strings.ReplaceAll(manyObjects(3), "name: p", "name: q"),
				"sub/kustomization.yaml": kustomization, "sub/a.yaml": manyObjects(3),
			},
			path:   ".",
			max:    5,
			wantAt: "sub (kustomize output): more than 5 objects",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tt.files)
			opts := DefaultOptions()
			if tt.max > 0 {
				opts.MaxObjects = tt.max
			}
			r, err := Render(context.Background(), dir, tt.path, opts)
			if tt.wantAt == "" {
				if err != nil {
					t.Fatalf("render at the cap failed: %v", err)
				}
				if len(r.Objects) != tt.max {
					t.Fatalf("rendered %d objects, want %d", len(r.Objects), tt.max)
				}
				return
			}
			if err == nil {
				t.Fatalf("rendered %d objects, want a refusal over the cap of %d", len(r.Objects), opts.MaxObjects)
			}
			var le *ObjectLimitError
			if !errors.As(err, &le) || le.Max != opts.MaxObjects || !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrObjectLimit) {
				t.Fatalf("error %v (%T) is not ErrTooLarge with an ObjectLimitError{Max: %d}", err, err, opts.MaxObjects)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tt.wantAt) || !strings.Contains(msg, "--max-objects") {
				t.Errorf("error %q\nwant it to start with %q and name --max-objects", msg, tt.wantAt)
			}
		})
	}
}

// BenchmarkRenderObjectCap measures the heap one render of a 70,000-document
// file (3.9 MiB, under the 4 MiB file cap) reaches with the default object
// cap and with the cap out of the way. peak-heap-MB samples the live heap
// every millisecond during the render; the result is reported, never
// asserted.
//
//	go test ./source/render -run '^$' -bench BenchmarkRenderObjectCap -benchtime 3x
func BenchmarkRenderObjectCap(b *testing.B) {
	dir := b.TempDir()
	data := manyObjects(70_000)
	if len(data) > 4<<20 {
		b.Fatalf("fixture is %d bytes, over the 4 MiB file cap", len(data))
	}
	if err := os.WriteFile(filepath.Join(dir, "big.yaml"), []byte(data), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		max  int
	}{
		{"default-cap-10000", DefaultMaxObjects},
		{"uncapped", 1 << 30},
	} {
		b.Run(bc.name, func(b *testing.B) {
			opts := DefaultOptions()
			opts.MaxObjects = bc.max
			b.ReportAllocs()
			var peak uint64
			for range b.N {
				runtime.GC()
				p := sampleHeap(func() {
					r, err := Render(context.Background(), dir, ".", opts)
					if (err == nil) != (bc.max > 70_000) {
						b.Fatalf("render: %v", err)
					}
					runtime.KeepAlive(r)
				})
				peak = max(peak, p)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		})
	}
}

// sampleHeap runs f and returns the largest heap in use seen while it ran.
func sampleHeap(f func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	var (
		wg   sync.WaitGroup
		peak = read()
		done = make(chan struct{})
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	return max(peak, read())
}
