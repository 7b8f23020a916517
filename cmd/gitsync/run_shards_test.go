package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/agent"
	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gitsynctest"
	"gitsync.dev/gitsync/internal/shard"
)

// shardAgent is one `gitsync run --shards auto` process.
type shardAgent struct {
	*runProc
	name string
}

// startShardAgent starts a replica named name (its Lease name) sharing the
// GitSyncs of ns; every reconcile it finishes is appended to trace.
func startShardAgent(t *testing.T, ns, name, trace string) *shardAgent {
	t.Helper()
	p := launchAgent(t, func(metrics, health, webhook string) []string {
		return []string{"run", "--kubeconfig", env.Kubeconfig, "--install-crds", "--watch-namespace", ns,
			"--shards", "auto", "--leader-election-namespace", ns,
			"--metrics-addr", metrics, "--health-addr", health, "--webhook-addr", webhook,
			"--cache-dir", t.TempDir(), "--log-format", "json", "--allow-local-sources"}
	}, append(os.Environ(), "KUBECONFIG=/nonexistent", agent.ShardTraceEnv+"="+trace, agent.ShardNameEnv+"="+name), true)
	return &shardAgent{runProc: p, name: name}
}

// kill ends the process with SIGKILL: no cleanup, its Lease stays behind.
func (a *shardAgent) kill(t *testing.T) {
	t.Helper()
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.done
}

// shardMetrics reads the replica's membership size and owned count.
func (a *shardAgent) shardMetrics() (members, owned int, err error) {
	resp, err := http.Get("http://" + a.metrics + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	members, owned = -1, -1
	for _, line := range strings.Split(string(b), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, _ := strconv.ParseFloat(value, 64)
		switch name {
		case "gitsync_shard_members":
			members = int(v)
		case "gitsync_shard_owned_gitsyncs":
			owned = int(v)
		}
	}
	return members, owned, nil
}

// waitShares waits until every agent sees exactly len(agents) members and
// the agents together own all n GitSyncs, then checks each owns its share
// within tolerance (a fraction of n/len(agents)).
func waitShares(t *testing.T, what string, n int, tolerance float64, agents ...*shardAgent) {
	t.Helper()
	owned := map[string]int{}
	longPoll(t, what+": shares settle", func(context.Context) (bool, error) {
		sum := 0
		for _, a := range agents {
			m, o, err := a.shardMetrics()
			if err != nil || m != len(agents) {
				return false, nil
			}
			owned[a.name] = o
			sum += o
		}
		return sum == n, nil
	})
	fair := float64(n) / float64(len(agents))
	for name, o := range owned {
		if d := float64(o) - fair; d > tolerance*fair || -d > tolerance*fair {
			t.Errorf("%s: %s owns %d of %d GitSyncs, want %.0f ± %.0f %%", what, name, o, n, fair, tolerance*100)
		}
	}
	t.Logf("%s: owned %v", what, owned)
}

func longPoll(t *testing.T, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 10*time.Minute, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestShardsShareWork runs three agents with --shards auto on 150 GitSyncs.
// TestShardsShareWork1000 does the same with 1,000 (skipped with -short).
func TestShardsShareWork(t *testing.T) { testShards(t, 150, 0.25) }

func TestShardsShareWork1000(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 GitSyncs on three agents: skipped with -short")
	}
	testShards(t, 1000, 0.15)
}

// testShards: three real agents share n GitSyncs (one ConfigMap each) within
// tolerance; one is killed (SIGKILL) and its share is served by the other
// two (a new commit reaches every GitSync); a new replica joins and the
// shares rebalance (the next commit reaches every GitSync again). Every
// reconcile each agent finished is traced with wall-clock times: no GitSync
// was reconciled by two agents in overlapping intervals.
//
// The namespace and the replica names are fixed, so the assignment is the
// same at every run (HRW over random names spreads n=150 keys by ±8 % σ).
func testShards(t *testing.T, n int, tolerance float64) {
	ns := fmt.Sprintf("shards-%d", n)
	c := gitsyncClient(t)
	makeNamespace(t, c, ns)
	trace := filepath.Join(t.TempDir(), "trace")
	dir := newRunRepo(t)
	commit := commitApps(t, dir, n, "1")

	a := startShardAgent(t, ns, "gitsync-shard-agent-a", trace)
	b := startShardAgent(t, ns, "gitsync-shard-agent-b", trace)
	cAgent := startShardAgent(t, ns, "gitsync-shard-agent-c", trace)
	hooked := newRunRepo(t)
	commitFiles(t, hooked, map[string]string{"deploy/hooked.yaml": configMap("hooked", "value", "1")})
	created := time.Now()
	createHooked(t, c, ns, hooked)
	createApps(t, c, ns, dir, n)
	waitValues(t, c, ns, n, "1", commit)
	shared := n + 1 // the GitSync "hooked" is shared too
	t.Logf("%d GitSyncs applied by three agents in %s", n, time.Since(created).Round(100*time.Millisecond))
	waitShares(t, "three agents", shared, tolerance, a, b, cAgent)

	cAgent.kill(t)
	killed := time.Now()
	waitShares(t, "agent c killed", shared, 2*tolerance, a, b)
	t.Logf("c's share moved %s after the kill (lease duration 15s)", time.Since(killed).Round(100*time.Millisecond))
	commit = commitApps(t, dir, n, "2")
	requestAll(t, c, ns, n)
	waitValues(t, c, ns, n, "2", commit)
	t.Logf("all %d app GitSyncs at the new commit %s after the kill", n, time.Since(killed).Round(100*time.Millisecond))

	joined := time.Now()
	d := startShardAgent(t, ns, "gitsync-shard-agent-d", trace)
	waitShares(t, "agent d joined", shared, tolerance, a, b, d)
	t.Logf("shares rebalanced %s after d started", time.Since(joined).Round(100*time.Millisecond))
	commit = commitApps(t, dir, n, "3")
	requestAll(t, c, ns, n)
	waitValues(t, c, ns, n, "3", commit)

	// A push webhook sent to a replica that does not own "hooked": it
	// forwards, and the owner applies the commit.
	owner := shard.Owner([]string{a.name, b.name, d.name}, ns+"/hooked")
	to := a
	if owner == a.name {
		to = b
	}
	hookCommit := commitFiles(t, hooked, map[string]string{"deploy/hooked.yaml": configMap("hooked", "value", "2")})
	sendPush(t, to.webhook, hooked)
	waitApplied(t, c, client.ObjectKey{Namespace: ns, Name: "hooked"}, hookCommit)
	t.Logf("webhook sent to %s applied by the owner %s", to.name, owner)

	runs := readTrace(t, trace)
	checkNoOverlap(t, runs)
	byAgent := map[string]int{}
	for _, r := range runs {
		byAgent[r.replica]++
	}
	if byAgent[d.name] == 0 {
		t.Errorf("agent d reconciled nothing after joining (runs per agent: %v)", byAgent)
	}
	if byAgent[cAgent.name] == 0 {
		t.Errorf("agent c reconciled nothing before it was killed (runs per agent: %v)", byAgent)
	}
	t.Logf("%d reconciles traced, per agent %v", len(runs), byAgent)
}

// createHooked creates the GitSync "hooked" on repo, which accepts GitHub
// push webhooks signed with "s3cret".
func createHooked(t *testing.T, c client.Client, ns, repo string) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: ns}, Data: map[string][]byte{"token": []byte("s3cret")}}
	if err := c.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	gs := gitsynctest.New(ns, "hooked", "file://"+repo, func(g *gitsyncv1.GitSync) {
		g.Spec.Webhook = &gitsyncv1.WebhookSpec{SecretRef: gitsyncv1.LocalObjectReference{Name: "hook"}}
		g.Spec.Prune = false
	})
	longPoll(t, "create GitSync hooked", func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, gs.DeepCopy())
		return err == nil || apierrors.IsAlreadyExists(err), nil
	})
}

// sendPush sends a signed GitHub push webhook for repo to addr.
func sendPush(t *testing.T, addr, repo string) {
	t.Helper()
	body := []byte(fmt.Sprintf(`{"ref":"refs/heads/main","repository":{"clone_url":%q}}`, "file://"+repo))
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write(body)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/hook/github", bytes.NewReader(body))
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook answered %d, want 202", resp.StatusCode)
	}
}

func makeNamespace(t *testing.T, c client.Client, ns string) {
	t.Helper()
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	longPoll(t, "create namespace "+ns, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, obj.DeepCopy())
		return err == nil, nil // AlreadyExists while a previous run's copy terminates
	})
	t.Cleanup(func() {
		// Remove the GitSyncs first, with Orphan, so the namespace goes
		// without waiting for finalizers no agent runs any more.
		list := &gitsyncv1.GitSyncList{}
		_ = c.List(context.Background(), list, client.InNamespace(ns))
		for i := range list.Items {
			gs := &list.Items[i]
			_ = c.Patch(context.Background(), gs, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		}
		_ = c.Delete(context.Background(), obj)
		_ = wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})), nil
		})
	})
}

func appName(i int) string { return fmt.Sprintf("app-%04d", i) }

// commitApps writes one ConfigMap per app with value v and commits.
func commitApps(t *testing.T, dir string, n int, v string) string {
	t.Helper()
	files := map[string]string{}
	for i := range n {
		files["apps/"+appName(i)+"/cm.yaml"] = configMap(appName(i), "value", v)
	}
	return commitFiles(t, dir, files)
}

func createApps(t *testing.T, c client.Client, ns, dir string, n int) {
	t.Helper()
	var g errgroup.Group
	g.SetLimit(8)
	for i := range n {
		g.Go(func() error {
			gs := gitsynctest.New(ns, appName(i), "file://"+dir, func(g *gitsyncv1.GitSync) {
				g.Spec.Source.Path = "apps/" + appName(i)
				g.Spec.RetryInterval = &metav1.Duration{Duration: 2 * time.Second}
			})
			return wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				err := c.Create(ctx, gs.DeepCopy())
				return err == nil || apierrors.IsAlreadyExists(err), nil // the CRD may not be served yet
			})
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("create GitSyncs: %v", err)
	}
}

// requestAll asks every GitSync for a reconcile with a fresh look at its
// remote, as `kubectl annotate` would.
func requestAll(t *testing.T, c client.Client, ns string, n int) {
	t.Helper()
	var g errgroup.Group
	g.SetLimit(8)
	for i := range n {
		g.Go(func() error {
			return agent.RequestReconcile(context.Background(), c, types.NamespacedName{Namespace: ns, Name: appName(i)})
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("annotate GitSyncs: %v", err)
	}
}

// waitValues waits until all n ConfigMaps hold v.
func waitValues(t *testing.T, c client.Client, ns string, n int, v, commit string) {
	t.Helper()
	longPoll(t, fmt.Sprintf("%d ConfigMaps at value %s (commit %s)", n, v, commit), func(ctx context.Context) (bool, error) {
		list := &corev1.ConfigMapList{}
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		got := 0
		for _, cm := range list.Items {
			if strings.HasPrefix(cm.Name, "app-") && cm.Data["value"] == v {
				got++
			}
		}
		return got == n, nil
	})
}

type tracedRun struct {
	key, replica string
	start, end   int64
}

func readTrace(t *testing.T, path string) []tracedRun {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var runs []tracedRun
	s := bufio.NewScanner(f)
	for s.Scan() {
		var r tracedRun
		if _, err := fmt.Sscanf(s.Text(), "%s %s %d %d", &r.key, &r.replica, &r.start, &r.end); err != nil {
			t.Fatalf("trace line %q: %v", s.Text(), err)
		}
		runs = append(runs, r)
	}
	return runs
}

// checkNoOverlap fails for every reconcile that started while another
// replica's reconcile of the same GitSync was still running.
func checkNoOverlap(t *testing.T, runs []tracedRun) {
	t.Helper()
	byKey := map[string][]tracedRun{}
	for _, r := range runs {
		byKey[r.key] = append(byKey[r.key], r)
	}
	for key, rs := range byKey {
		sort.Slice(rs, func(i, j int) bool { return rs[i].start < rs[j].start })
		last := rs[0]
		for _, r := range rs[1:] {
			if r.start < last.end && r.replica != last.replica {
				t.Errorf("%s reconciled by %s from %d while %s ran it until %d", key, r.replica, r.start, last.replica, last.end)
			}
			if r.end > last.end {
				last = r
			}
		}
	}
}

// TestShardFlags: --shards auto turns leader election off unless it was
// asked for, which is refused, as is any other value.
func TestShardFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
		wantLE  bool
	}{
		{args: []string{"--shards", "auto"}},
		{args: []string{"--shards", "auto", "--leader-elect=false"}},
		{args: []string{"--shards", "auto", "--leader-elect"}, wantErr: "exclude each other"},
		{args: []string{"--shards", "some"}, wantErr: `want "auto"`},
		{args: []string{"--leader-elect"}, wantLE: true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := newRunCmd(nil)
			if err := cmd.Flags().Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			o := &runOptions{}
			o.shards, _ = cmd.Flags().GetString("shards")
			o.agent.LeaderElection, _ = cmd.Flags().GetBool("leader-elect")
			err := o.shardFlags(cmd.Flags())
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr == "" && o.agent.LeaderElection != tc.wantLE:
				t.Errorf("leader election %v, want %v", o.agent.LeaderElection, tc.wantLE)
			}
		})
	}
}
