package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gitsynctest"
	"gitsync.dev/gitsync/internal/gittest"
)

// startRun starts the real binary against the test control plane.
func startRun(t *testing.T, ns string, extra ...string) *runProc {
	t.Helper()
	return launchAgent(t, func(metrics, health, webhook string) []string {
		return append([]string{"run", "--kubeconfig", env.Kubeconfig, "--install-crds", "--watch-namespace", ns,
			"--metrics-addr", metrics, "--health-addr", health, "--webhook-addr", webhook,
			"--cache-dir", t.TempDir(), "--log-format", "json",
			"--allow-local-sources"}, extra...) // the test repositories are file:// URLs
	}, nil, true)
}

func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func gitsyncClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(env.Config, client.Options{Scheme: cliScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func poll(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 90*time.Second, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func waitApplied(t *testing.T, c client.Client, key client.ObjectKey, commit string) {
	t.Helper()
	poll(t, "GitSync Ready at "+commit, func(ctx context.Context) (bool, error) {
		gs := &gitsyncv1.GitSync{}
		if err := c.Get(ctx, key, gs); err != nil {
			return false, nil // the CRD may not be installed yet
		}
		ready := meta.FindStatusCondition(gs.Status.Conditions, gitsyncv1.ConditionReady)
		return ready != nil && ready.Status == metav1.ConditionTrue && strings.Contains(gs.Status.LastAppliedRevision, commit), nil
	})
}

func newRunRepo(t *testing.T) string {
	t.Helper()
	return gittest.NewRepo(t, t.TempDir()).Dir
}

func commitFiles(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	return gittest.OpenRepo(t, dir).Commit("change", files)
}

// TestRunAppliesOnWebhook runs the agent binary: a GitSync becomes Ready, a
// signed GitHub push webhook applies the next commit although the interval
// is an hour, and /metrics, /healthz and /readyz answer.
func TestRunAppliesOnWebhook(t *testing.T) {
	ns := env.Namespace(t)
	a := startRun(t, ns, "--leader-elect=false")
	c := gitsyncClient(t)
	ctx := context.Background()
	dir := newRunRepo(t)
	commit1 := commitFiles(t, dir, map[string]string{"deploy/a.yaml": configMap("a", "value", "1")})

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: ns}, Data: map[string][]byte{"token": []byte("s3cret")}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	gs := gitsynctest.New(ns, "web", "file://"+dir, func(g *gitsyncv1.GitSync) {
		g.Spec.Webhook = &gitsyncv1.WebhookSpec{SecretRef: gitsyncv1.LocalObjectReference{Name: "hook"}}
	})
	poll(t, "create GitSync (CRD installed by the agent)", func(ctx context.Context) (bool, error) {
		return c.Create(ctx, gs.DeepCopy()) == nil, nil
	})
	key := client.ObjectKeyFromObject(gs)
	waitApplied(t, c, key, commit1)

	commit2 := commitFiles(t, dir, map[string]string{"deploy/a.yaml": configMap("a", "value", "2")})
	sendPush(t, a.webhook, dir)
	waitApplied(t, c, key, commit2)

	code, text := httpGet("http://" + a.metrics + "/metrics")
	for _, want := range []string{"gitsync_reconcile_duration_seconds", `gitsync_last_applied_revision_info{name="web"`, "workqueue_depth"} {
		if code != http.StatusOK || !strings.Contains(text, want) {
			t.Errorf("/metrics (%d) lacks %s", code, want)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := httpGet("http://" + a.health + path); code != http.StatusOK {
			t.Errorf("%s = %d %s", path, code, body)
		}
	}
}

// TestRunLeaderElection starts two agents electing through one Lease: only
// the leader reconciles, and the other takes over when the leader stops.
func TestRunLeaderElection(t *testing.T) {
	ns := env.Namespace(t)
	c := gitsyncClient(t)
	ctx := context.Background()
	le := []string{"--leader-elect", "--leader-election-namespace", ns}
	first := startRun(t, ns, le...)
	dir := newRunRepo(t)
	commit1 := commitFiles(t, dir, map[string]string{"deploy/a.yaml": configMap("a", "value", "1")})
	gs := gitsynctest.New(ns, "le", "file://"+dir)
	poll(t, "create GitSync", func(ctx context.Context) (bool, error) { return c.Create(ctx, gs.DeepCopy()) == nil, nil })
	key := client.ObjectKeyFromObject(gs)
	waitApplied(t, c, key, commit1)
	second := startRun(t, ns, le...)
	poll(t, "second agent serving metrics", func(context.Context) (bool, error) {
		code, _ := httpGet("http://" + second.metrics + "/metrics")
		return code == http.StatusOK, nil
	})

	commit2 := commitFiles(t, dir, map[string]string{"deploy/a.yaml": configMap("a", "value", "2")})
	patch := client.MergeFrom(gs.DeepCopy())
	gs.Annotations = map[string]string{"gitsync.dev/requested-at": "1"}
	if err := c.Patch(ctx, gs, patch); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, c, key, commit2)
	if _, text := httpGet("http://" + second.metrics + "/metrics"); strings.Contains(text, "gitsync_reconcile_duration_seconds_count") {
		t.Errorf("the agent that is not leading reconciled")
	}

	first.stop(t)
	commit3 := commitFiles(t, dir, map[string]string{"deploy/a.yaml": configMap("a", "value", "3")})
	patch = client.MergeFrom(gs.DeepCopy())
	gs.Annotations["gitsync.dev/requested-at"] = "2"
	if err := c.Patch(ctx, gs, patch); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, c, key, commit3)
}

// TestVersion prints a version line.
func TestVersion(t *testing.T) {
	r := gitsync(t, "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "gitsync ") {
		t.Errorf("gitsync version: %s", r)
	}
}
