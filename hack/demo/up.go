package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"gitsync.dev/gitsync/internal/testenv"
)

// demoNamespace holds the GitSync and, via targetNamespace, the guestbook.
const demoNamespace = "demo"

// webhookSecret signs the demo's webhook calls; it is a demo value, not a credential.
const webhookSecret = "demo-webhook-secret"

func up(ctx context.Context, cfg config) error {
	dir, bin := cfg.dir, cfg.gitsync
	if !cfg.force {
		if err := checkWorkCopy(filepath.Join(dir, "work", "guestbook")); err != nil { // guard.go
			return err
		}
	}
	if err := down(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	binDir, err := testenv.BinDir("kubectl")
	if err != nil {
		return err
	}
	kubectl := filepath.Join(binDir, "kubectl")

	say("starting a local control plane: etcd, kube-apiserver, controller-manager, scheduler, and kwok faking one Node")
	st, err := startControlPlane(ctx, dir, cfg.gitAddr)
	if err != nil {
		return err
	}
	say("control plane up; kubeconfig: %s", st.Kubeconfig)

	say("creating a Git repository from examples/guestbook, served over HTTP on loopback")
	repo, err := newRepo(dir, st.GitURL, "guestbook", cfg.example)
	if err != nil {
		return err
	}
	say("repository %s at commit %s", repo.url, short(repo.head))
	examples, err := newExamplesRepo(dir, st.GitURL, cfg.examples)
	if err != nil {
		return err
	}
	say("serving every example as %s (examples/ inside; examples/gitsyncs-local points GitSyncs at it)", examples.url)

	addrs, err := freeAddrs(3)
	if err != nil {
		return err
	}
	hookAddr, metricsAddr, healthAddr := addrs[0], addrs[1], addrs[2]
	say("starting `gitsync run` (webhooks on %s, metrics on http://%s/metrics)", hookAddr, metricsAddr)
	if _, err := startBackground(dir, "gitsync", bin, "run",
		"--kubeconfig", st.Kubeconfig, "--install-crds", "--leader-elect=false",
		"--webhook-addr", hookAddr, "--metrics-addr", metricsAddr, "--health-addr", healthAddr,
		"--allow-networks", "127.0.0.0/8"); err != nil { // the demo's Git server is on loopback
		return err
	}

	c, err := newCluster(ctx, st.Kubeconfig)
	if err != nil {
		return err
	}
	say("creating GitSync %s/guestbook pointing at branch main (it polls every minute; the changes below arrive at once by webhook)", demoNamespace)
	if err := c.createGitSync(ctx, repo.url); err != nil {
		return withLog(dir, err)
	}
	if err := c.waitApplied(ctx, repo.head, 3*time.Minute); err != nil {
		return withLog(dir, err)
	}
	say("GitSync is Ready at %s:", short(repo.head))
	run(bin, "status", "--kubeconfig", st.Kubeconfig, "-n", demoNamespace)
	run(kubectl, "--kubeconfig", st.Kubeconfig, "get", "deployments,services", "-n", demoNamespace)

	say("committing a change: frontend replicas 2 -> 3, then firing the GitHub-style webhook")
	if err := repo.edit("frontend-deployment.yaml", "replicas: 2", "replicas: 3", "Scale frontend to 3"); err != nil {
		return err
	}
	if err := fireWebhook(ctx, hookAddr, repo.url, repo.head); err != nil {
		return withLog(dir, err)
	}
	if err := c.waitDeployment(ctx, "frontend", 3, 3*time.Minute); err != nil {
		return withLog(dir, err)
	}
	say("applied %s: frontend has 3 available replicas", short(repo.head))
	run(kubectl, "--kubeconfig", st.Kubeconfig, "get", "deployment", "frontend", "-n", demoNamespace)

	say("removing redis-follower-service.yaml from Git; gitsync prunes what it applied and left Git")
	if err := repo.remove("redis-follower-service.yaml", "Remove the redis-follower Service"); err != nil {
		return err
	}
	if err := fireWebhook(ctx, hookAddr, repo.url, repo.head); err != nil {
		return withLog(dir, err)
	}
	if err := c.waitGone(ctx, "redis-follower", 3*time.Minute); err != nil {
		return withLog(dir, err)
	}
	if err := c.waitApplied(ctx, repo.head, 3*time.Minute); err != nil {
		return withLog(dir, err)
	}
	say("pruned Service/%s/redis-follower", demoNamespace)
	run(kubectl, "--kubeconfig", st.Kubeconfig, "get", "services", "-n", demoNamespace)
	run(bin, "status", "--kubeconfig", st.Kubeconfig, "-n", demoNamespace)

	if err := recordDemoHead(repo); err != nil { // guard.go: the next run keeps your commits
		return err
	}
	printNext(os.Stdout, next{kubeconfig: st.Kubeconfig, bin: bin, dir: dir, hookAddr: hookAddr, repo: repo, examplesURL: examples.url})
	return nil
}

// startControlPlane starts `demo serve` in the background and waits until it
// has written its state file.
func startControlPlane(ctx context.Context, dir, gitAddr string) (*state, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	pid, err := startBackground(dir, "control-plane", self, "serve", "--dir", dir, "--git-addr", gitAddr)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(4 * time.Minute)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile(filepath.Join(dir, "state.json"))
		if err == nil {
			var st state
			if err := json.Unmarshal(data, &st); err != nil {
				return nil, err
			}
			return &st, nil
		}
		if !alive(pid) {
			return nil, fmt.Errorf("control plane exited:\n%s", logTail(dir, "control-plane"))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("control plane not up after 4 minutes:\n%s", logTail(dir, "control-plane"))
}

func withLog(dir string, err error) error {
	return fmt.Errorf("%w\n--- last lines of %s/gitsync.log ---\n%s", err, dir, logTail(dir, "gitsync"))
}

// freeAddrs returns n distinct free loopback addresses: each is held open
// until all are picked, so the kernel cannot hand out one port twice.
func freeAddrs(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	return addrs, nil
}

func short(commit string) string {
	if len(commit) > 7 {
		return commit[:7]
	}
	return commit
}
