//go:build e2e

package e2e

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/testenv"
)

const (
	release    = "gitsync"
	releaseNS  = "gitsync-system"
	appsNS     = "e2e-apps"
	agentSA    = "system:serviceaccount:" + releaseNS + ":gitsync"
	leaseName  = "gitsync-leader"
	hookSecret = "e2e-webhook-token"
)

// TestChartOnNode installs the chart with the image `make image` built onto
// the real node and runs gitsync as a user would:
//   - least privilege by default: with no rules for what the repository
//     holds, the GitSync names the missing permission and is not Ready;
//   - the documented opt-in rules (helm upgrade): the agent, Ready through its
//     probes on a read-only root filesystem, syncs from a Git server on the
//     host and repairs drift;
//   - a signed push webhook sent to the agent's Service ClusterIP (kube-proxy)
//     syncs the new commit, though the interval is an hour;
//   - with two replicas, a leader killed with SIGKILL (no Lease release) is
//     replaced once its Lease runs out, and every ConfigMap write in the
//     apiserver's audit log comes from the replica leading at the time.
func TestChartOnNode(t *testing.T) {
	archive := imageArchive(t)
	ref := imageRef(t, archive)
	repoName, tag, ok := strings.Cut(ref, ":")
	if !ok {
		t.Fatalf("image %s in %s has no tag", ref, archive)
	}
	env := testenv.StartNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := env.ImportImage(ctx, archive); err != nil {
		t.Fatal(err)
	}
	c := gitsyncClient(t, env)
	dumpOnFailure(t, env, releaseNS)
	dumpOnFailure(t, env, appsNS)

	repo := newGitRepo(t, env.NodeIP())
	first := repo.commit("blue", map[string]string{"apps/config.yaml": configMapYAML("blue")})
	for _, ns := range []string{releaseNS, appsNS} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}

	h := &helm{t: t, bin: filepath.Join(env.BinDir, "helm"), kubeconfig: env.Kubeconfig, home: t.TempDir()}
	h.run("install", release, "../charts/gitsync", "--namespace", releaseNS,
		"--set", "image.repository="+repoName, "--set", "image.tag="+tag, "--set", "image.pullPolicy=Never",
		"--set-json", fmt.Sprintf(`agent.extraArgs=["--allow-networks=%s/32"]`, env.NodeIP()))
	pods := waitAgentPods(t, c, 1)
	checkAgentPod(t, pods[0])

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: hookSecret, Namespace: releaseNS},
		StringData: map[string]string{"token": "e2e-shared-secret"},
	}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	gs := &gitsyncv1.GitSync{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: releaseNS},
		Spec: gitsyncv1.GitSyncSpec{
			Source:        gitsyncv1.GitSource{URL: repo.URL, Ref: gitsyncv1.GitRef{Branch: "main"}, Path: "apps"},
			Interval:      metav1.Duration{Duration: time.Hour}, // only drift, webhooks and retries sync
			RetryInterval: &metav1.Duration{Duration: 2 * time.Second},
			Prune:         true,
			Webhook:       &gitsyncv1.WebhookSpec{SecretRef: gitsyncv1.LocalObjectReference{Name: hookSecret}},
		},
	}
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}

	// Least privilege: the chart grants nothing on what repositories hold.
	ready := waitGitSync(t, c, "the missing permission reported", func(gs *gitsyncv1.GitSync, ready *metav1.Condition) bool {
		return ready != nil && ready.Status == metav1.ConditionFalse && strings.Contains(ready.Message, "configmaps")
	})
	t.Logf("without rules: Ready=%s %s: %s", ready.Status, ready.Reason, ready.Message)
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: appsNS, Name: "e2e-config"}, &cm); !apierrors.IsNotFound(err) {
		t.Fatalf("the ConfigMap exists without the rights to write it: %v", err)
	}

	// The documented opt-in: rules for the kinds the repository holds.
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte(`rbac:
  rules:
    - apiGroups: [""]
      resources: ["configmaps"]
      verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	h.run("upgrade", release, "../charts/gitsync", "--namespace", releaseNS, "--reuse-values", "-f", rules)
	// A Forbidden GitSync is asked again at its next reconcile; ask for one
	// as `gitsync reconcile` does.
	requestReconcile(t, c)
	waitApplied(t, c, first)
	waitColor(t, c, "blue")

	// Drift: an edit to a synced object is put back.
	setColor(t, c, "red")
	waitColor(t, c, "blue")

	// A push webhook through the Service's ClusterIP.
	second := repo.commit("green", map[string]string{"apps/config.yaml": configMapYAML("green")})
	var svc corev1.Service
	if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: release}, &svc); err != nil {
		t.Fatal(err)
	}
	sendWebhook(t, net.JoinHostPort(svc.Spec.ClusterIP, "9292"), repo.URL, second, "e2e-shared-secret")
	waitApplied(t, c, second)
	waitColor(t, c, "green")

	// Two replicas; kill the leader.
	h.run("upgrade", release, "../charts/gitsync", "--namespace", releaseNS, "--reuse-values", "--set", "replicaCount=2")
	pods = waitAgentPods(t, c, 2)
	leader, standby := leaderAndStandby(t, c, pods)
	holder := leaseHolder(t, c)
	before := configMap(t, c)
	t.Logf("leader %s (%s, %s), standby %s (%s)", leader.Name, holder, leader.Status.PodIP, standby.Name, standby.Status.PodIP)
	killedAt := time.Now()
	if err := env.KillContainer(leader, "gitsync"); err != nil {
		t.Fatal(err)
	}
	var lease coordinationv1.Lease
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: leaseName}, &lease); err != nil {
			return false, nil
		}
		h := lease.Spec.HolderIdentity
		return h != nil && *h != "" && *h != holder, nil
	})
	if err != nil {
		t.Fatalf("the Lease is still held by the killed leader %s: %v", holder, err)
	}
	newHolder := *lease.Spec.HolderIdentity
	newLeader := podOf(t, c, newHolder)
	t.Logf("Lease taken over by %s (pod %s) %s after the kill (lease duration %ds)",
		newHolder, newLeader.Name, time.Since(killedAt).Round(100*time.Millisecond), ptrInt(lease.Spec.LeaseDurationSeconds))
	if after := configMap(t, c); after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the ConfigMap was written again by the failover (resourceVersion %s, was %s) though nothing changed", after.ResourceVersion, before.ResourceVersion)
	}
	// The new leader works: it repairs drift.
	setColor(t, c, "red")
	waitColor(t, c, "green")

	// Every ConfigMap write came from the leader of its time.
	writes := agentWrites(t, env.AuditLog())
	if len(writes) == 0 {
		t.Fatalf("no ConfigMap write by %s in the audit log", agentSA)
	}
	afterKill := 0
	for _, w := range writes {
		want := leader.Status.PodIP
		if w.at.After(killedAt) {
			want = newLeader.Status.PodIP
			afterKill++
		}
		if w.ip != want {
			t.Errorf("%s of ConfigMap %s at %s came from %s, not from the leader of the time (%s)", w.verb, w.name, w.at.Format(time.RFC3339Nano), w.ip, want)
		}
	}
	if afterKill == 0 {
		t.Errorf("no ConfigMap write after the kill: the drift repair by the new leader is missing from the audit log")
	}
}

func requestReconcile(t *testing.T, c client.Client) {
	t.Helper()
	gs := &gitsyncv1.GitSync{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: "app"}}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"gitsync.dev/requested-at":%q}}}`, time.Now().UTC().Format(time.RFC3339Nano))
	if err := c.Patch(context.Background(), gs, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

func configMapYAML(color string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: e2e-config
  namespace: %s
data:
  color: %s
`, appsNS, color)
}

// imageArchive is the docker-loadable image `make image` writes
// ($GITSYNC_E2E_IMAGE overrides).
func imageArchive(t *testing.T) string {
	t.Helper()
	p := os.Getenv("GITSYNC_E2E_IMAGE")
	if p == "" {
		p = "../bin/image/gitsync.tar"
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no gitsync image archive (run `make image`, or `make e2e` which does): %v", err)
	}
	return p
}

// imageRef reads the image's name from the archive's manifest.json.
func imageRef(t *testing.T, archive string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no manifest.json: %v", archive, err)
		}
		if strings.TrimPrefix(hdr.Name, "./") != "manifest.json" {
			continue
		}
		var m []struct{ RepoTags []string }
		if err := json.NewDecoder(tr).Decode(&m); err != nil {
			t.Fatalf("%s manifest.json: %v", archive, err)
		}
		if len(m) == 0 || len(m[0].RepoTags) == 0 {
			t.Fatalf("%s names no image", archive)
		}
		return m[0].RepoTags[0]
	}
}

func gitsyncClient(t *testing.T, env *testenv.Env) client.Client {
	t.Helper()
	scheme := env.Scheme
	if err := gitsyncv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type helm struct {
	t          *testing.T
	bin        string
	kubeconfig string
	home       string
}

func (h *helm) run(args ...string) {
	h.t.Helper()
	cmd := exec.Command(h.bin, append(args, "--kubeconfig", h.kubeconfig)...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(h.home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(h.home, "config"),
		"HELM_DATA_HOME="+filepath.Join(h.home, "data"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		h.t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// waitAgentPods waits for n Ready agent pods (and no other) and returns them.
func waitAgentPods(t *testing.T, c client.Client, n int) []*corev1.Pod {
	t.Helper()
	var out []*corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(releaseNS), client.MatchingLabels{"app.kubernetes.io/name": "gitsync"}); err != nil {
			return false, nil
		}
		out = nil
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp != nil {
				return false, nil
			}
			if podReady(p) {
				out = append(out, p)
			}
		}
		return len(out) == n && len(pods.Items) == n, nil
	})
	if err != nil {
		t.Fatalf("%d Ready agent pods never came: %v (have %d)", n, err, len(out))
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// checkAgentPod asserts the agent really runs on the node as the chart says:
// its readiness came from the probes of a started container with a
// read-only root filesystem, as non-root.
func checkAgentPod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if p.Spec.NodeName != testenv.NodeName {
		t.Errorf("agent pod on node %q, want %q", p.Spec.NodeName, testenv.NodeName)
	}
	ctr := p.Spec.Containers[0]
	sc := ctr.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("agent container without readOnlyRootFilesystem: %+v", sc)
	}
	if ctr.ReadinessProbe == nil || ctr.LivenessProbe == nil {
		t.Errorf("agent container without probes")
	}
	if len(p.Status.ContainerStatuses) != 1 || !p.Status.ContainerStatuses[0].Ready || p.Status.ContainerStatuses[0].State.Running == nil {
		t.Errorf("agent container not running and ready: %+v", p.Status.ContainerStatuses)
	}
	if p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("agent container restarted %d times", p.Status.ContainerStatuses[0].RestartCount)
	}
}

func waitGitSync(t *testing.T, c client.Client, what string, done func(*gitsyncv1.GitSync, *metav1.Condition) bool) *metav1.Condition {
	t.Helper()
	var gs gitsyncv1.GitSync
	var ready *metav1.Condition
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: "app"}, &gs); err != nil {
			return false, nil
		}
		ready = meta.FindStatusCondition(gs.Status.Conditions, gitsyncv1.ConditionReady)
		return done(&gs, ready), nil
	})
	if err != nil {
		t.Fatalf("GitSync: %s never happened: %v; status %+v", what, err, gs.Status.Conditions)
	}
	return ready
}

func waitApplied(t *testing.T, c client.Client, commit string) {
	t.Helper()
	waitGitSync(t, c, "commit "+commit+" applied and Ready", func(gs *gitsyncv1.GitSync, ready *metav1.Condition) bool {
		return ready != nil && ready.Status == metav1.ConditionTrue && strings.Contains(gs.Status.LastAppliedRevision, commit)
	})
}

func configMap(t *testing.T, c client.Client) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: appsNS, Name: "e2e-config"}, &cm); err != nil {
		t.Fatal(err)
	}
	return &cm
}

func setColor(t *testing.T, c client.Client, color string) {
	t.Helper()
	cm := configMap(t, c)
	cm.Data["color"] = color
	// As `kubectl edit` would: gitsync takes kubectl's fields back
	// without spec.force.
	if err := c.Update(context.Background(), cm, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
}

func waitColor(t *testing.T, c client.Client, color string) {
	t.Helper()
	var cm corev1.ConfigMap
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: appsNS, Name: "e2e-config"}, &cm); err != nil {
			return false, nil
		}
		return cm.Data["color"] == color, nil
	})
	if err != nil {
		t.Fatalf("ConfigMap color never became %s: %v (is %q)", color, err, cm.Data["color"])
	}
}

// sendWebhook posts a GitHub push event for commit, signed with token, to
// addr. It retries only while nothing answers (kube-proxy may not have
// written the Service's rules yet); any answer but 2xx fails.
func sendWebhook(t *testing.T, addr, repoURL, commit, token string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"ref": "refs/heads/main", "after": commit,
		"repository": map[string]string{"clone_url": repoURL},
	})
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write(body)
	hc := &http.Client{Timeout: 10 * time.Second}
	var resp *http.Response
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/hook/github", bytes.NewReader(body))
		if err != nil {
			return false, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		resp, err = hc.Do(req)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("webhook to the Service at %s: nothing answered: %v", addr, err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("webhook to the Service at %s answered %s: %s", addr, resp.Status, data)
	}
}

func leaseHolder(t *testing.T, c client.Client) string {
	t.Helper()
	var lease coordinationv1.Lease
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: releaseNS, Name: leaseName}, &lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Fatal("the Lease has no holder")
	}
	return *lease.Spec.HolderIdentity
}

// podOf returns the agent pod whose name leads a Lease holder identity
// (controller-runtime's identity is the hostname, the pod name, then "_").
func podOf(t *testing.T, c client.Client, identity string) *corev1.Pod {
	t.Helper()
	name, _, _ := strings.Cut(identity, "_")
	var p corev1.Pod
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: releaseNS, Name: name}, &p); err != nil {
		t.Fatalf("pod of Lease holder %s: %v", identity, err)
	}
	return &p
}

func leaderAndStandby(t *testing.T, c client.Client, pods []*corev1.Pod) (*corev1.Pod, *corev1.Pod) {
	t.Helper()
	leader := podOf(t, c, leaseHolder(t, c))
	for _, p := range pods {
		if p.Name != leader.Name {
			return leader, p
		}
	}
	t.Fatalf("no standby beside leader %s", leader.Name)
	return nil, nil
}

func ptrInt(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

type write struct {
	verb, name, ip string
	at             time.Time
}

// agentWrites reads the agent's successful ConfigMap writes in appsNS from
// the apiserver's audit log.
func agentWrites(t *testing.T, path string) []write {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []write
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for sc.Scan() {
		var ev struct {
			Stage     string   `json:"stage"`
			Verb      string   `json:"verb"`
			SourceIPs []string `json:"sourceIPs"`
			User      struct {
				Username string `json:"username"`
			} `json:"user"`
			ObjectRef struct {
				Namespace string `json:"namespace"`
				Name      string `json:"name"`
			} `json:"objectRef"`
			ResponseStatus struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
			StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit log line: %v", err)
		}
		if ev.Stage != "ResponseComplete" || ev.User.Username != agentSA || ev.ObjectRef.Namespace != appsNS || ev.ResponseStatus.Code/100 != 2 || len(ev.SourceIPs) == 0 {
			continue
		}
		out = append(out, write{verb: ev.Verb, name: ev.ObjectRef.Name, ip: ev.SourceIPs[0], at: ev.StageTimestamp.Time})
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return out
}
