package bench

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/yaml"

	"gitsync.dev/gitsync/internal/testenv"
)

// scaleFloor adds a "floor" sub-benchmark to BenchmarkAgentScale: the same
// objects the agent converges, sent as raw parallel server-side applies
// (floorWorkers workers, no reads, no diff, no Git), into fresh namespaces,
// with no agent running. It is what the control plane alone needs for the
// writes, so the agent's figures can be read as a ratio to it.
var scaleFloor = flag.Bool("scale.floor", false, "also time raw parallel server-side apply of the same objects (sub-benchmark floor)")

// benchScaleFloor applies every repository's manifests, each into its own
// namespace as the agent does, and reports the time, objects/s and the
// control plane's CPU.
func benchScaleFloor(b *testing.B, syncs, objects int) {
	run := "floor-" + utilrand.String(4)
	namespaces := make([]string, syncs)
	var objs []*unstructured.Unstructured
	for i := range namespaces {
		namespaces[i] = fmt.Sprintf("scale-%s-%03d", run, i)
		for j := range objects {
			_, body := scaleManifest(i, j)
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(body), &u.Object); err != nil {
				b.Fatal(err)
			}
			u.SetNamespace(namespaces[i])
			objs = append(objs, u)
		}
	}
	createNamespaces(b, namespaces, run)
	b.Cleanup(func() { cleanupScale(b, gitsyncClient(b), namespaces) })
	c := &testenv.RequestCounter{}
	f := newFloor(b, c.Wrap(env.Config))
	cp := controlPlanePIDs()
	before := map[string]time.Duration{}
	for name, p := range cp {
		before[name] = procCPU(p)
	}
	profDone := make(chan struct{})
	go func() {
		defer close(profDone)
		saveAPIServerProfile(b, *scaleCPUProfile, "apiserver-cpu-floor.pprof")
	}()
	took := f.timed(b, objs)
	<-profDone
	b.ReportMetric(took.Seconds(), "s-converge")
	b.ReportMetric(float64(len(objs))/took.Seconds(), "objects/s")
	b.ReportMetric((procCPU(cp["kube-apiserver"]) - before["kube-apiserver"]).Seconds(), "apiserver-cpu-s")
	b.ReportMetric((procCPU(cp["etcd"]) - before["etcd"]).Seconds(), "etcd-cpu-s")
	b.ReportMetric(float64(c.All.Load()), "converge-requests")
}

// timed applies objs as b's timed operation and returns how long it took.
func (f *floor) timed(b *testing.B, objs []*unstructured.Unstructured) time.Duration {
	b.Helper()
	b.ResetTimer()
	start := time.Now()
	if err := f.apply(context.Background(), objs); err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	b.StopTimer()
	return took
}
