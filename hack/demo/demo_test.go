package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gitsync.dev/gitsync/internal/testenv"
)

// TestDemoEndToEnd runs `demo up` as `make demo` does — the real binaries,
// a background control plane and Git server — and checks that it tells the
// whole story and exits 0, then that `demo down` stops every program.
func TestDemoEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane with workloads and runs the whole demo")
	}
	if _, err := testenv.BinDir("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kubectl"); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	gitsync, demo := filepath.Join(tmp, "gitsync"), filepath.Join(tmp, "demo")
	build(t, gitsync, "../../cmd/gitsync")
	build(t, demo, ".")
	dir := filepath.Join(tmp, "state")
	t.Cleanup(func() { _ = exec.Command(demo, "down", "--dir", dir).Run() })

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, demo, "up", "--dir", dir, "--gitsync", gitsync, "--example", "../../examples/guestbook").CombinedOutput()
	if err != nil {
		t.Fatalf("demo up: %v\n%s", err, out)
	}
	for _, want := range []string{
		"GitSync is Ready at",
		"webhook POST /hook/github answered 202",
		"frontend has 3 available replicas",
		"pruned Service/demo/redis-follower",
		"make demo-down",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "kubeconfig")); err != nil {
		t.Errorf("demo left no kubeconfig: %v", err)
	}

	pids := map[string]int{}
	for _, name := range []string{"control-plane", "gitsync"} {
		data, err := os.ReadFile(filepath.Join(dir, name+".pid"))
		if err != nil {
			t.Fatalf("%s pid file: %v", name, err)
		}
		pids[name], _ = strconv.Atoi(strings.TrimSpace(string(data)))
		if !alive(pids[name]) {
			t.Errorf("%s (pid %d) is not running after demo up", name, pids[name])
		}
	}
	if out, err := exec.Command(demo, "down", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("demo down: %v\n%s", err, out)
	}
	for name, pid := range pids {
		if alive(pid) {
			t.Errorf("%s (pid %d) still running after demo down", name, pid)
		}
	}
}

func build(t *testing.T, out, pkg string) {
	t.Helper()
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}
