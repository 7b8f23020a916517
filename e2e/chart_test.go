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
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/shard"
	"gitsync.dev/gitsync/internal/testenv"
)

const (
	release    = "gitsync"
	releaseNS  = "gitsync-system"
	appsNS     = "e2e-apps"
	agentSA    = "system:serviceaccount:" + releaseNS + ":gitsync"
	hookSecret = "e2e-webhook-token"
	// fleetCandidates is how many fleet paths are pushed; checkSharing picks
	// three owned by each replica (short of that with odds below 1e-6).
	fleetCandidates = 30
)

// TestChartOnNode installs the chart with the image `make image` built onto
// the real node and runs gitsync as a user would:
//   - installed as earlier charts ran it, one elected leader
//     (agent.shards=off); least privilege by default: with no rules for what
//     the repository holds, the GitSync names the missing permission and is
//     not Ready;
//   - the documented opt-in rules (helm upgrade): the agent, Ready through its
//     probes on a read-only root filesystem, syncs from a Git server on the
//     host and repairs drift;
//   - a signed push webhook sent to the agent's Service ClusterIP (kube-proxy)
//     syncs the new commit, though the interval is an hour;
//   - upgraded to two replicas sharing the GitSyncs (the chart's default
//     now), both reconcile a share; one killed with SIGKILL (no Lease
//     deleted) hands its share to the survivor once its Lease runs out, and
//     the apiserver's audit log shows no GitSync's objects written by both
//     (checkSharing).
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
	// Installed as releases were before replicas shared the work: one
	// elected leader (agent.shards=off); the upgrade to two replicas below
	// switches to sharing, the chart's default.
	values := []string{"--set", "image.repository=" + repoName, "--set", "image.tag=" + tag, "--set", "image.pullPolicy=Never",
		"--set-json", fmt.Sprintf(`agent.extraArgs=["--allow-networks=%s/32"]`, env.NodeIP())}
	h.run(append([]string{"install", release, "../charts/gitsync", "--namespace", releaseNS, "--set", "agent.shards=off"}, values...)...)
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

	// Two replicas share the GitSyncs; one is killed and the survivor
	// takes its share.
	// The rolling update to sharing replicas, the chart's default: the new
	// ones wait for the old leader to stop (cmd/gitsync TestShardsAfterLeaderStops proves that
	// wait; here it only has to let the upgrade through).
	oldLeader := pods[0]
	// The fleet's paths are pushed now, well before its GitSyncs exist: a
	// GitSync's first resolve may share an ls-remote answer up to
	// Limits.ResolveShareFor old, and one from before the push would not
	// have its path.
	files := map[string]string{}
	for i := range fleetCandidates {
		files[fmt.Sprintf("fleet/fleet-%d/config.yaml", i)] = namedConfigMapYAML(fmt.Sprintf("e2e-fleet-%d", i), "blue")
	}
	fleet := repo.commit("fleet", files)
	// The same values but agent.shards: the chart's default applies.
	h.run(append([]string{"upgrade", release, "../charts/gitsync", "--namespace", releaseNS, "-f", rules, "--set", "replicaCount=2"}, values...)...)
	pods = waitAgentPods(t, c, 2)
	for _, p := range pods {
		if p.Name == oldLeader.Name {
			t.Fatalf("the leader-elected pod %s survived the upgrade to sharing", p.Name)
		}
		if strings.Contains(podLogs(t, env, releaseNS, p.Name, "gitsync"), "waiting for it to stop") {
			t.Logf("%s waited for the leader %s to stop before taking a share", p.Name, oldLeader.Name)
		}
	}
	checkSharing(t, env, c, repo, fleet, pods)
}

// checkSharing: with two replicas sharing the GitSyncs (the chart's
// default), each reconciles its own share, as the apiserver's audit log
// shows by source address; one killed with SIGKILL (no Lease deleted, no
// reconcile drained) gives its share to the survivor, which repairs drift
// there once the killed replica's Lease has run out, and no GitSync's
// objects are ever written by both.
func checkSharing(t *testing.T, env *testenv.Env, c client.Client, repo *gitRepo, fleet string, pods []*corev1.Pod) {
	ctx := context.Background()
	leaseOf := sharedLeases(t, c, pods)
	members := []string{leaseOf[pods[0].Name], leaseOf[pods[1].Name]}
	// GitSync names chosen among the candidates so that each replica owns
	// three of them.
	owner := map[string]*corev1.Pod{} // fleet GitSync name -> the pod owning it
	count := map[string]int{}
	for i := 0; count[pods[0].Name] < 3 || count[pods[1].Name] < 3; i++ {
		if i == fleetCandidates {
			t.Fatalf("of %d GitSync names, %v are owned by each replica: want 3 each", fleetCandidates, count)
		}
		name := fmt.Sprintf("fleet-%d", i)
		p := pods[0]
		if shard.Owner(members, releaseNS+"/"+name) == members[1] {
			p = pods[1]
		}
		if count[p.Name] == 3 {
			continue
		}
		count[p.Name]++
		owner[name] = p
	}
	for name := range owner {
		gs := &gitsyncv1.GitSync{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: releaseNS},
			Spec: gitsyncv1.GitSyncSpec{
				Source:        gitsyncv1.GitSource{URL: repo.URL, Ref: gitsyncv1.GitRef{Branch: "main"}, Path: "fleet/" + name},
				Interval:      metav1.Duration{Duration: time.Hour},
				RetryInterval: &metav1.Duration{Duration: 2 * time.Second},
				Prune:         true,
			},
		}
		if err := c.Create(ctx, gs); err != nil {
			t.Fatal(err)
		}
	}
	for name := range owner {
		waitAppliedNamed(t, c, name, fleet)
	}

	killed, survivor := pods[0], pods[1]
	before := map[string]string{} // the survivor's ConfigMaps' resourceVersions
	for name, p := range owner {
		if p == survivor {
			before[name] = configMapNamed(t, c, "e2e-"+name).ResourceVersion
		}
	}
	// The ReplicaSet removes the killed pod when scaled down below, so its
	// restarted container never rejoins: every write from its address after
	// the kill would be the killed replica's.
	cost := `{"metadata":{"annotations":{"controller.kubernetes.io/pod-deletion-cost":"-1000"}}}`
	if err := c.Patch(ctx, killed, client.RawPatch(types.MergePatchType, []byte(cost))); err != nil {
		t.Fatal(err)
	}
	t.Logf("replicas %s (%s, Lease %s) and %s (%s, Lease %s); killing %s", killed.Name, killed.Status.PodIP, leaseOf[killed.Name],
		survivor.Name, survivor.Status.PodIP, leaseOf[survivor.Name], killed.Name)
	killedAt := time.Now()
	if err := env.KillContainer(killed, "gitsync"); err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: release}, &d); err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(ctx, &d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1}}`))); err != nil {
		t.Fatal(err)
	}
	// Drift on every ConfigMap of the killed replica's share: only the
	// survivor can repair it, once it owns that share.
	for name, p := range owner {
		if p == killed {
			setColorOf(t, c, "e2e-"+name, "red")
		}
	}
	for name, p := range owner {
		if p == killed {
			waitColorOf(t, c, "e2e-"+name, "blue")
		}
	}
	t.Logf("the killed replica's share repaired by %s %s after the kill", survivor.Name, time.Since(killedAt).Round(100*time.Millisecond))
	if left := waitAgentPods(t, c, 1); left[0].Name != survivor.Name {
		t.Fatalf("scaling down kept %s, not the survivor %s", left[0].Name, survivor.Name)
	}
	for name, rv := range before {
		if got := configMapNamed(t, c, "e2e-"+name).ResourceVersion; got != rv {
			t.Errorf("ConfigMap e2e-%s of the survivor's own share was written again by the failover (resourceVersion %s, was %s) though nothing changed", name, got, rv)
		}
	}
	var dead coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: leaseOf[killed.Name]}, &dead); err != nil {
		t.Fatalf("the killed replica's Lease: %v (a crash leaves it for the others to wait out)", err)
	}
	if dead.Spec.RenewTime == nil {
		t.Fatalf("the killed replica's Lease %s has no renewTime", dead.Name)
	}
	expired := dead.Spec.RenewTime.Add(time.Duration(ptr.Deref(dead.Spec.LeaseDurationSeconds, 0)) * time.Second)
	for _, p := range shareWriteProblems(agentWrites(t, env.AuditLog()), owner, killed, survivor, killedAt, expired) {
		t.Error(p)
	}
}

// shareWriteProblems checks, from the audit log, every write of the fleet's
// ConfigMaps: before the kill each came from its GitSync's owner, and each
// replica wrote some; after it, none came from the killed replica's
// address, the survivor did not rewrite its own share, and each of the
// killed replica's ConfigMaps switched writer once, to the survivor, not
// before the killed replica's Lease had run out (its last renewal plus the
// lease duration: the survivor counts from when it saw that renewal, which
// was later).
func shareWriteProblems(writes []write, owner map[string]*corev1.Pod, killed, survivor *corev1.Pod, killedAt, expired time.Time) []string {
	var problems []string
	byName := map[string][]write{}
	for _, w := range writes {
		if name, ok := strings.CutPrefix(w.name, "e2e-"); ok && owner[name] != nil {
			byName[name] = append(byName[name], w)
		}
	}
	wroteBefore := map[string]bool{}
	for name, p := range owner {
		ws := byName[name]
		if len(ws) == 0 {
			problems = append(problems, fmt.Sprintf("no write of ConfigMap e2e-%s in the audit log", name))
			continue
		}
		taken := false
		for _, w := range ws {
			at := w.at.Format(time.RFC3339Nano)
			switch {
			case w.at.Before(killedAt) && w.ip != p.Status.PodIP:
				problems = append(problems, fmt.Sprintf("%s of ConfigMap %s at %s came from %s, not from its owner %s (%s)", w.verb, w.name, at, w.ip, p.Name, p.Status.PodIP))
			case w.at.Before(killedAt):
				wroteBefore[w.ip] = true
			case w.ip != survivor.Status.PodIP:
				problems = append(problems, fmt.Sprintf("%s of ConfigMap %s at %s, after the kill, came from %s, not from the survivor (%s)", w.verb, w.name, at, w.ip, survivor.Status.PodIP))
			case p == survivor:
				problems = append(problems, fmt.Sprintf("%s of ConfigMap %s at %s: the survivor rewrote its own share after the kill", w.verb, w.name, at))
			case w.at.Before(expired):
				problems = append(problems, fmt.Sprintf("%s of ConfigMap %s at %s by the survivor, before the killed replica's Lease ran out at %s", w.verb, w.name, at, expired.Format(time.RFC3339Nano)))
			default:
				taken = true
			}
		}
		if p == killed && !taken {
			problems = append(problems, fmt.Sprintf("no write of ConfigMap e2e-%s by the survivor after the kill: the drift repair is missing from the audit log", name))
		}
	}
	if !wroteBefore[killed.Status.PodIP] || !wroteBefore[survivor.Status.PodIP] {
		problems = append(problems, fmt.Sprintf("before the kill only %v wrote the fleet's ConfigMaps: both replicas should own a share", wroteBefore))
	}
	return problems
}

// sharedLeases waits until each of pods holds its own Lease in the release
// namespace and both have published a view listing both (the membership
// settled), and returns each pod's Lease name.
func sharedLeases(t *testing.T, c client.Client, pods []*corev1.Pod) map[string]string {
	t.Helper()
	var leases coordinationv1.LeaseList
	var out map[string]string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.List(ctx, &leases, client.InNamespace(releaseNS), client.HasLabels{gitsyncv1.LabelShardGroup}); err != nil {
			return false, nil
		}
		out = map[string]string{}
		var names []string
		for _, l := range leases.Items {
			names = append(names, l.Name)
			for _, p := range pods {
				if strings.HasPrefix(l.Name, "gitsync-shard-"+p.Name+"-") {
					out[p.Name] = l.Name
				}
			}
		}
		sort.Strings(names)
		if len(leases.Items) != len(pods) || len(out) != len(pods) {
			return false, nil
		}
		for _, l := range leases.Items {
			if l.Annotations[gitsyncv1.AnnotationShardView] != strings.Join(names, ",") {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		var views []string
		for _, l := range leases.Items {
			views = append(views, l.Name+": "+l.Annotations[gitsyncv1.AnnotationShardView])
		}
		t.Fatalf("the replicas never agreed on their membership: %v; Leases %v", err, views)
	}
	return out
}

func requestReconcile(t *testing.T, c client.Client) {
	t.Helper()
	gs := &gitsyncv1.GitSync{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: "app"}}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"gitsync.dev/requested-at":%q}}}`, time.Now().UTC().Format(time.RFC3339Nano))
	if err := c.Patch(context.Background(), gs, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

func configMapYAML(color string) string { return namedConfigMapYAML("e2e-config", color) }

func namedConfigMapYAML(name, color string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: %s
data:
  color: %s
`, name, appsNS, color)
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
	return waitGitSyncNamed(t, c, "app", what, done)
}

func waitGitSyncNamed(t *testing.T, c client.Client, name, what string, done func(*gitsyncv1.GitSync, *metav1.Condition) bool) *metav1.Condition {
	t.Helper()
	var gs gitsyncv1.GitSync
	var ready *metav1.Condition
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: name}, &gs); err != nil {
			return false, nil
		}
		ready = meta.FindStatusCondition(gs.Status.Conditions, gitsyncv1.ConditionReady)
		return done(&gs, ready), nil
	})
	if err != nil {
		t.Fatalf("GitSync %s: %s never happened: %v; status %+v", name, what, err, gs.Status.Conditions)
	}
	return ready
}

func waitApplied(t *testing.T, c client.Client, commit string) {
	t.Helper()
	waitAppliedNamed(t, c, "app", commit)
}

func waitAppliedNamed(t *testing.T, c client.Client, name, commit string) {
	t.Helper()
	waitGitSyncNamed(t, c, name, "commit "+commit+" applied and Ready", func(gs *gitsyncv1.GitSync, ready *metav1.Condition) bool {
		return ready != nil && ready.Status == metav1.ConditionTrue && strings.Contains(gs.Status.LastAppliedRevision, commit)
	})
}

func configMapNamed(t *testing.T, c client.Client, name string) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: appsNS, Name: name}, &cm); err != nil {
		t.Fatal(err)
	}
	return &cm
}

func setColor(t *testing.T, c client.Client, color string) {
	t.Helper()
	setColorOf(t, c, "e2e-config", color)
}

func setColorOf(t *testing.T, c client.Client, name, color string) {
	t.Helper()
	cm := configMapNamed(t, c, name)
	cm.Data["color"] = color
	// As `kubectl edit` would: gitsync takes kubectl's fields back
	// without spec.force.
	if err := c.Update(context.Background(), cm, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
}

func waitColor(t *testing.T, c client.Client, color string) {
	t.Helper()
	waitColorOf(t, c, "e2e-config", color)
}

func waitColorOf(t *testing.T, c client.Client, name, color string) {
	t.Helper()
	var cm corev1.ConfigMap
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: appsNS, Name: name}, &cm); err != nil {
			return false, nil
		}
		return cm.Data["color"] == color, nil
	})
	if err != nil {
		t.Fatalf("ConfigMap %s: color never became %s: %v (is %q)", name, color, err, cm.Data["color"])
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
