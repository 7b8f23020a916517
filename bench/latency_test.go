package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gittest"
)

// Push → applied: one GitSync of latencyObjects ConfigMaps on a repository
// served over HTTP on loopback (git http-backend), the real agent binary.
// Each sample commits a change to one ConfigMap, pushes, and (webhook case)
// sends the signed GitHub push event; the latency ends when the GitSync's
// status names the commit as applied (seen by a watch). The poll case has no
// webhook: spec.interval is latency.interval, and each commit waits a random
// part of an interval first so pushes fall anywhere in the poll cycle.
//
//	go test ./bench -run '^$' -bench BenchmarkPushLatency -benchtime 1x -timeout 30m
//
// The floor, per sample, is what a minimal sync does for the same change:
// `git ls-remote` of the branch over the same HTTP server plus one
// server-side apply of the changed ConfigMap.
var (
	latencyCommits  = flag.Int("latency.commits", 20, "commits (samples) per BenchmarkPushLatency case")
	latencyInterval = flag.Duration("latency.interval", 5*time.Second, "spec.interval of the poll case")
)

const latencyObjects = 10

func BenchmarkPushLatency(b *testing.B) {
	dir := b.TempDir()
	bin := buildAgent(b, dir)
	root := filepath.Join(dir, "git")
	if err := os.MkdirAll(root, 0o755); err != nil {
		b.Fatal(err)
	}
	srv, err := gittest.Start(root, gittest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	hook := freeLoopback(b)
	agent := startAgent(b, bin, env.Kubeconfig, 4, "--webhook-addr", hook, "--allow-networks", "127.0.0.0/8")
	c := gitsyncClient(b)
	for _, mode := range []string{"webhook", "poll"} {
		b.Run(mode, func(b *testing.B) { benchLatency(b, c, agent, srv, root, "http://"+hook, mode == "webhook") })
	}
}

func benchLatency(b *testing.B, c client.WithWatch, agent *scaleAgent, srv *gittest.Server, root, hookURL string, webhook bool) {
	ctx := context.Background()
	run := "lat-" + utilrand.String(5)
	bare := filepath.Join(root, run+".git")
	work := filepath.Join(b.TempDir(), "work")
	runGit(b, "", nil, "init", "-q", "--bare", "-b", "main", bare)
	runGit(b, "", nil, "init", "-q", "-b", "main", work)
	runGit(b, work, nil, "remote", "add", "origin", bare)
	files := map[string]string{}
	for j := range latencyObjects {
		files[fmt.Sprintf("deploy/cm-%02d.yaml", j)] = latencyCM(j, 0)
	}
	first := commitPush(b, work, files)
	url := srv.URL + "/" + run + ".git"

	createNamespaces(b, []string{run}, run)
	b.Cleanup(func() { cleanupScale(b, c, []string{run}) })
	gs := &gitsyncv1.GitSync{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: run, Labels: map[string]string{scaleLabel: run}},
		Spec: gitsyncv1.GitSyncSpec{
			Source:   gitsyncv1.GitSource{URL: url, Ref: gitsyncv1.GitRef{Branch: "main"}, Path: "deploy"},
			Interval: metav1.Duration{Duration: *latencyInterval},
			Prune:    true,
		},
	}
	token := "bench-" + utilrand.String(8)
	if webhook {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: run}, Data: map[string][]byte{"token": []byte(token)}}
		if err := c.Create(ctx, secret); err != nil {
			b.Fatal(err)
		}
		gs.Spec.Interval = metav1.Duration{Duration: time.Hour}
		gs.Spec.Webhook = &gitsyncv1.WebhookSpec{SecretRef: gitsyncv1.LocalObjectReference{Name: "hook"}}
	}
	if err := c.Create(ctx, gs); err != nil {
		b.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	if _, err := waitRevision(ctx, c, key, first, 2*time.Minute); err != nil {
		b.Fatalf("first commit not applied: %v\n%s", err, agent.logTail(20))
	}
	f := newFloor(b, env.Config)

	var lat, floor []time.Duration
	b.ResetTimer()
	for i := range *latencyCommits {
		if !webhook {
			b.StopTimer()
			time.Sleep(rand.N(*latencyInterval)) // a random phase of the poll cycle, not a settle wait
			b.StartTimer()
		}
		j := i % latencyObjects
		files := map[string]string{fmt.Sprintf("deploy/cm-%02d.yaml", j): latencyCM(j, i+1)}
		commit := commitPush(b, work, files)
		start := time.Now()
		if webhook {
			sendPush(b, hookURL, token, url, commit)
		}
		at, err := waitRevision(ctx, c, key, commit, 2*(*latencyInterval)+time.Minute)
		if err != nil {
			b.Fatalf("commit %d not applied: %v\n%s", i+1, err, agent.logTail(20))
		}
		lat = append(lat, at.Sub(start))

		b.StopTimer()
		floor = append(floor, latencyFloor(b, f, url, run, j, i+1))
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	slices.Sort(floor)
	b.ReportMetric(quantile(lat, 0.5).Seconds(), "s-p50")
	b.ReportMetric(quantile(lat, 0.95).Seconds(), "s-p95")
	b.ReportMetric(quantile(floor, 0.5).Seconds(), "s-floor-p50")
	b.ReportMetric(quantile(floor, 0.95).Seconds(), "s-floor-p95")
	b.ReportMetric(float64(len(lat)), "samples")
	b.Logf("push→applied (%d samples, webhook %v): %v; floor %v", len(lat), webhook, lat, floor)
}

func latencyCM(j, version int) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%02d\ndata:\n  version: %q\n  payload: %s\n", j, fmt.Sprint(version), strings.Repeat("x", 256))
}

// commitPush writes files in the work tree, commits and pushes to origin.
func commitPush(b *testing.B, work string, files map[string]string) string {
	b.Helper()
	for name, content := range files {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	runGit(b, work, nil, "add", "-A")
	runGit(b, work, nil, "-c", "user.name=bench", "-c", "user.email=bench@gitsync.dev", "commit", "-q", "-m", "change")
	runGit(b, work, nil, "push", "-q", "origin", "main")
	return runGit(b, work, nil, "rev-parse", "HEAD")
}

// sendPush sends the GitHub push event a host would send for commit.
func sendPush(b *testing.B, hookURL, token, repoURL, commit string) {
	b.Helper()
	body := []byte(fmt.Sprintf(`{"ref":"refs/heads/main","after":%q,"repository":{"clone_url":%q}}`, commit, repoURL))
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, hookURL+"/hook/github", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", utilrand.String(16))
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b.Fatalf("webhook answered %d, want 202", resp.StatusCode)
	}
}

// waitRevision watches the GitSync until its status names commit as
// applied and returns when it saw that.
func waitRevision(ctx context.Context, c client.WithWatch, key types.NamespacedName, commit string, timeout time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := func(gs *gitsyncv1.GitSync) bool { return strings.Contains(gs.Status.LastAppliedRevision, commit) }
	sel := &client.ListOptions{Namespace: key.Namespace, FieldSelector: fields.OneTermEqualSelector("metadata.name", key.Name)}
	for {
		list := &gitsyncv1.GitSyncList{}
		if err := c.List(ctx, list, sel); err != nil {
			return time.Time{}, err
		}
		for i := range list.Items {
			if done(&list.Items[i]) {
				return time.Now(), nil
			}
		}
		opts := *sel
		opts.Raw = &metav1.ListOptions{ResourceVersion: list.ResourceVersion}
		w, err := c.Watch(ctx, &gitsyncv1.GitSyncList{}, &opts)
		if err != nil {
			return time.Time{}, err
		}
		for ev := range w.ResultChan() {
			if gs, ok := ev.Object.(*gitsyncv1.GitSync); ok && ev.Type == watch.Modified && done(gs) {
				w.Stop()
				return time.Now(), nil
			}
		}
		w.Stop()
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
	}
}

// latencyFloor times what a minimal sync of the same change costs: asking
// the Git server for the branch (ls-remote over HTTP) and one server-side
// apply of the changed ConfigMap (into a namespace of its own, so the agent
// does not see it).
func latencyFloor(b *testing.B, f *floor, url, ns string, j, version int) time.Duration {
	b.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetName(fmt.Sprintf("floor-%02d", j))
	u.SetNamespace(ns)
	u.Object["data"] = map[string]any{"version": fmt.Sprint(version), "payload": strings.Repeat("x", 256)}
	start := time.Now()
	cmd := exec.Command("git", "ls-remote", url, "refs/heads/main")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git ls-remote: %v\n%s", err, out)
	}
	if err := f.parallel(context.Background(), []*unstructured.Unstructured{u}); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1)+0.5)]
}
