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

	"k8s.io/apimachinery/pkg/util/wait"

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
	gitAddr := freeAddrT(t)
	upArgs := []string{"up", "--dir", dir, "--gitsync", gitsync, "--example", "../../examples/guestbook",
		"--examples", "../../examples", "--git-addr", gitAddr}
	out, err := exec.CommandContext(ctx, demo, upArgs...).CombinedOutput()
	if err != nil {
		t.Fatalf("demo up: %v\n%s", err, out)
	}
	for _, want := range []string{
		"GitSync is Ready at",
		"webhook POST /hook/github answered 202",
		"frontend has 3 available replicas",
		"pruned Service/demo/redis-follower",
		"make demo-down",
		changeMarker, "git push", "reconcile guestbook", webhookMarker, "apply -k examples/gitsyncs-local", " ui --kubeconfig",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "kubeconfig")); err != nil {
		t.Errorf("demo left no kubeconfig: %v", err)
	}

	kubeconfig := filepath.Join(dir, "kubeconfig")
	t.Run("the closing instructions change the cluster", func(t *testing.T) {
		// Run what the demo told us to type: the edit, commit and push, then
		// the webhook (the poll would take a minute, reconcile is another
		// command's test).
		script := block(t, string(out), changeMarker+":") + "\n" + block(t, string(out), webhookMarker)
		sh := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
		sh.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		got, err := sh.CombinedOutput()
		if err != nil {
			t.Fatalf("the printed commands failed: %v\n%s\n--- script ---\n%s", err, got, script)
		}
		if !strings.Contains(string(got), "202") {
			t.Errorf("the printed webhook was not accepted (want 202):\n%s", got)
		}
		waitKubectl(t, ctx, kubeconfig, "1", "-n", "demo", "get", "deployment", "frontend", "-o", "jsonpath={.status.availableReplicas}")
	})
	t.Run("a second up keeps your commit", func(t *testing.T) {
		got, err := exec.CommandContext(ctx, demo, upArgs...).CombinedOutput()
		if err == nil {
			t.Fatalf("demo up over a work copy with a commit of ours succeeded:\n%s", got)
		}
		for _, want := range []string{"commits the demo did not make", "Scale frontend to 1", "--force"} {
			if !strings.Contains(string(got), want) {
				t.Errorf("refusal lacks %q:\n%s", want, got)
			}
		}
	})
	t.Run("every example GitSync works against the demo", func(t *testing.T) {
		kubectl := filepath.Join(binDir(t), "kubectl")
		manifests, err := exec.CommandContext(ctx, kubectl, "kustomize", "../../examples/gitsyncs-local").Output()
		if err != nil {
			t.Fatal(err)
		}
		apply := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "apply", "-f", "-")
		apply.Stdin = strings.NewReader(strings.ReplaceAll(string(manifests), defaultGitAddr, gitAddr))
		if got, err := apply.CombinedOutput(); err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, got)
		}
		want := strings.Join([]string{"demo/guestbook=True", "gitsync-system/platform=True", "greetings/greetings=True",
			"guestbook/guestbook=True", "hello-dev/hello=True", "hello-prod/hello=True", "team-a/app=True"}, " ")
		waitKubectl(t, ctx, kubeconfig, want, "get", "gitsync", "-A", "-o",
			`jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}`)
	})

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
	cmd := exec.Command("go", "build", "-o", out, pkg)
	// As make demo builds it (make build): without cgo, whose render
	// children need more address space than the shipped agent's do.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

// block returns the lines after the line holding marker, up to the first
// line that is blank or a comment, without their indentation.
func block(t *testing.T, out, marker string) string {
	t.Helper()
	_, rest, ok := strings.Cut(out, marker)
	if !ok {
		t.Fatalf("output lacks %q:\n%s", marker, out)
	}
	var lines []string
	for _, l := range strings.Split(rest, "\n")[1:] {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			break
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

// waitKubectl runs kubectl with args until its output, trimmed, is want.
func waitKubectl(t *testing.T, ctx context.Context, kubeconfig, want string, args ...string) {
	t.Helper()
	kubectl := filepath.Join(binDir(t), "kubectl")
	var got string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		b, _ := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...).Output()
		got = strings.TrimSpace(string(b))
		return got == want, nil
	})
	if err != nil {
		// What the GitSyncs say and what the agent logged explain most misses.
		b, _ := exec.Command(kubectl, "--kubeconfig", kubeconfig, "get", "gitsync", "-A", "-o",
			`jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}: {.status.conditions}{"\n"}{end}`).CombinedOutput()
		log, _ := os.ReadFile(filepath.Join(filepath.Dir(kubeconfig), "gitsync.log"))
		if len(log) > 20000 {
			log = log[len(log)-20000:]
		}
		t.Fatalf("kubectl %s: got %q, want %q\n--- GitSyncs ---\n%s\n--- the agent's log, its end ---\n%s", strings.Join(args, " "), got, want, b, log)
	}
}

func binDir(t *testing.T) string {
	t.Helper()
	d, err := testenv.BinDir("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func freeAddrT(t *testing.T) string {
	t.Helper()
	a, err := freeAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	return a[0]
}
