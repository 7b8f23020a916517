package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// The CLI against kubectl on the same objects: cliObjects ConfigMaps in one
// file, each tool in a fresh namespace of its own: a first apply (creates),
// an unchanged re-apply, and a diff of the unchanged directory. gitsync is
// `gitsync apply|diff DIR`, kubectl is `kubectl apply|diff --server-side -f
// DIR` (kubectl built by hack/tools at the pinned Kubernetes version, found
// in the testenv binary directory). Each is one run of a fresh process; the
// figures are wall time and the process's CPU (user + system).
//
//	go test ./bench -run '^$' -bench BenchmarkCLI -benchtime 1x -timeout 30m
const cliObjects = 1000

func BenchmarkCLI(b *testing.B) {
	dir := b.TempDir()
	gitsyncBin := buildAgent(b, dir)
	kubectl := filepath.Join(env.BinDir, "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		b.Skipf("kubectl not built (hack/tools/build.sh kubectl): %v", err)
	}
	manifests := filepath.Join(dir, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		b.Fatal(err)
	}
	var all strings.Builder
	for i := range cliObjects {
		fmt.Fprintf(&all, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%04d\n  labels: {app: bench}\ndata:\n  index: %q\n  payload: %s\n",
			i, fmt.Sprint(i), strings.Repeat("x", 256))
	}
	if err := os.WriteFile(filepath.Join(manifests, "all.yaml"), []byte(all.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	tools := map[string]func(verb, ns string) *exec.Cmd{
		"gitsync": func(verb, ns string) *exec.Cmd {
			return exec.Command(gitsyncBin, verb, manifests, "--kubeconfig", env.Kubeconfig, "-n", ns)
		},
		"kubectl": func(verb, ns string) *exec.Cmd {
			return exec.Command(kubectl, verb, "--server-side", "-f", manifests, "--kubeconfig", env.Kubeconfig, "-n", ns)
		},
	}
	b.Run("floor", func(b *testing.B) { benchCLIFloor(b, all.String()) })
	for _, tool := range []string{"kubectl", "gitsync"} {
		b.Run(tool, func(b *testing.B) {
			ns := "cli-" + tool + "-" + utilrand.String(4)
			createNamespaces(b, []string{ns}, ns)
			b.Cleanup(func() {
				ctx := context.Background()
				_ = env.Client.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns))
				_ = env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			})
			for _, step := range []struct{ name, verb string }{{"create", "apply"}, {"unchanged", "apply"}, {"diff", "diff"}} {
				b.Run(step.name, func(b *testing.B) { timeCLI(b, tools[tool](step.verb, ns)) })
			}
		})
	}
}

// benchCLIFloor times the first apply's floor: the same ConfigMaps sent as
// raw parallel server-side applies (floorWorkers workers, no reads, no
// diff) into a fresh namespace, from the benchmark process, in the same run
// as the tools it is the floor of.
func benchCLIFloor(b *testing.B, manifests string) {
	ns := "cli-floor-" + utilrand.String(4)
	createNamespaces(b, []string{ns}, ns)
	b.Cleanup(func() {
		ctx := context.Background()
		_ = env.Client.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns))
		_ = env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	var objs []*unstructured.Unstructured
	for doc := range strings.SplitSeq(manifests, "---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			b.Fatal(err)
		}
		u.SetNamespace(ns)
		objs = append(objs, u)
	}
	b.ReportMetric(newFloor(b, env.Config).timed(b, objs).Seconds(), "s-wall")
}

// timeCLI runs cmd once as the benchmark's operation; a diff's exit code 1
// (differences) fails it as any other error, since nothing changed.
func timeCLI(b *testing.B, cmd *exec.Cmd) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), "KUBECONFIG=/nonexistent")
	b.ResetTimer()
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatalf("%s: %v\n%.2000s", strings.Join(cmd.Args, " "), err, out.String())
	}
	b.ReportMetric(took.Seconds(), "s-wall")
	b.ReportMetric((cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds(), "cpu-s")
}
