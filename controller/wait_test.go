package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// deployment is a Deployment manifest. The test control plane runs no
// kube-controller-manager, so it never gets a status and stays InProgress
// until a test writes one (markAvailable).
func deployment(name, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers: [{name: app, image: %[2]q}]
`, name, image)
}

// markAvailable writes the status a Deployment controller would write once
// the rollout of the current generation is done.
func markAvailable(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		n := *d.Spec.Replicas
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation,
			Replicas:           n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			},
		}
		return c.Status().Update(ctx, d)
	})
	if err != nil {
		t.Fatalf("mark Deployment %s/%s available: %v", ns, name, err)
	}
}

// waiting waits until key is Reconciling because it waits for the health
// of the object subject, and returns it.
func waitingFor(t *testing.T, c client.Client, key client.ObjectKey, subject string) *v1.GitSync {
	t.Helper()
	return waitCondition(t, c, key, v1.ConditionReconciling, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		r := meta.FindStatusCondition(g.Status.Conditions, v1.ConditionReady)
		return r != nil && r.Status == metav1.ConditionFalse && r.Reason == v1.ReasonWaitingForHealth &&
			strings.Contains(r.Message, subject)
	})
}

func withWait(timeout time.Duration) func(*v1.GitSync) {
	return func(g *v1.GitSync) {
		g.Spec.Wait = true
		g.Spec.Timeout = &metav1.Duration{Duration: timeout}
	}
}

// TestWaitNeverBlocksWorkers: eight GitSyncs wait (spec.wait, a ten-minute
// timeout) for Deployments that never become available, with two workers.
// A ninth GitSync is still synced and its drift repaired: waiting holds no
// worker. With a wait inside the reconcile, both workers stay taken for ten
// minutes and the ninth is never Ready.
func TestWaitNeverBlocksWorkers(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns, concurrent: 2})
	ctx := context.Background()
	r := newRepo(t)
	files := map[string]string{"free/cm.yaml": configMap("free", "git")}
	for i := range 8 {
		files[fmt.Sprintf("w%d/web.yaml", i)] = deployment(fmt.Sprintf("web-%d", i), "example.invalid/never:1")
	}
	r.commit(files)
	for i := range 8 {
		gs := newGitSync(ns, fmt.Sprintf("w%d", i), r.url(), withWait(10*time.Minute), func(g *v1.GitSync) {
			g.Spec.Source.Path = fmt.Sprintf("w%d", i)
		})
		if err := c.Create(ctx, gs); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 8 {
		key := client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("w%d", i)}
		g := waitingFor(t, c, key, fmt.Sprintf("Deployment/%s/web-%d", ns, i))
		if g.Status.LastAppliedRevision != "" {
			t.Errorf("%s: lastAppliedRevision = %q while waiting, want none", key, g.Status.LastAppliedRevision)
		}
	}

	free := newGitSync(ns, "free", r.url(), func(g *v1.GitSync) { g.Spec.Source.Path = "free" })
	if err := c.Create(ctx, free); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, client.ObjectKeyFromObject(free), v1.ConditionReady, metav1.ConditionTrue, nil)
	cm, err := getCM(t, c, ns, "free")
	if err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data["value"] = "edited by hand"
	edited := time.Now()
	if err := c.Patch(ctx, cm, patch, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "drift on the ninth GitSync repaired", func(context.Context) (bool, error) {
		cm, err := getCM(t, c, ns, "free")
		return err == nil && cm.Data["value"] == "git", nil
	})
	t.Logf("drift repaired %s after the edit, with 8 GitSyncs waiting and 2 workers (a figure, not asserted)", time.Since(edited).Round(time.Millisecond))
	// The waits are still there: nothing above made them give up.
	waitingFor(t, c, client.ObjectKey{Namespace: ns, Name: "w0"}, "web-0")
}

// TestWaitPreemptedByNewRevision: revision A's Deployment never becomes
// available and A's wait would last ten minutes; revision B, pushed and
// announced meanwhile, is applied at once, and the GitSync becomes Ready on
// B as soon as B's Deployment reports available (a status change, with the
// interval an hour away).
func TestWaitPreemptedByNewRevision(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns, concurrent: 1})
	ctx := context.Background()
	r := newRepo(t)
	r.commit(map[string]string{"deploy/web.yaml": deployment("web", "example.invalid/broken:1")})
	gs := newGitSync(ns, "pre", r.url(), withWait(10*time.Minute))
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitingFor(t, c, key, "Deployment/"+ns+"/web")

	commitB := r.commit(map[string]string{
		"deploy/web.yaml": deployment("web", "example.invalid/fixed:1"),
		"deploy/b.yaml":   configMap("b", "from B"),
	})
	triggered := time.Now()
	a.rec.Trigger(key) // as a push webhook does
	eventually(t, "revision B applied", func(context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil {
			return false, nil
		}
		_, err := getCM(t, c, ns, "b")
		return err == nil && d.Spec.Template.Spec.Containers[0].Image == "example.invalid/fixed:1", nil
	})
	t.Logf("revision B applied %s after its trigger, during A's 10m wait (a figure, not asserted)", time.Since(triggered).Round(time.Millisecond))
	// The objects are written before the status that reports them: wait for
	// B's status, which must again be a wait (B's Deployment is not ready
	// yet either), not a leftover of A's.
	waitCondition(t, c, key, v1.ConditionReconciling, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		r := meta.FindStatusCondition(g.Status.Conditions, v1.ConditionReady)
		return strings.Contains(g.Status.LastAttemptedRevision, commitB) &&
			r != nil && r.Reason == v1.ReasonWaitingForHealth && strings.Contains(r.Message, "Deployment/"+ns+"/web")
	})

	markAvailable(t, c, ns, "web")
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, commitB)
	})
	// Waiting is progress: its events are Normal, and the end of the wait
	// says which revision is now applied.
	eventually(t, "a RevisionApplied event", func(ctx context.Context) (bool, error) {
		evs := &eventsv1.EventList{}
		if err := c.List(ctx, evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		applied := false
		for _, e := range evs.Items {
			if e.Regarding.Name != key.Name {
				continue
			}
			if e.Type == corev1.EventTypeWarning {
				t.Fatalf("Warning event %s: %s", e.Reason, e.Note)
			}
			applied = applied || (e.Reason == "RevisionApplied" && strings.Contains(e.Note, commitB))
		}
		return applied, nil
	})
}

// TestWaitTimeoutStalls: past spec.timeout a GitSync whose Deployment is
// not ready is Stalled naming it; the Deployment becoming available later
// still makes it Ready.
func TestWaitTimeoutStalls(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	r := newRepo(t)
	r.commit(map[string]string{"deploy/web.yaml": deployment("slow", "example.invalid/slow:1")})
	gs := newGitSync(ns, "slow", r.url(), withWait(5*time.Second))
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionStalled, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		s := meta.FindStatusCondition(g.Status.Conditions, v1.ConditionStalled)
		return s.Reason == v1.ReasonHealthCheckFailed && strings.Contains(s.Message, "Deployment/"+ns+"/slow is InProgress")
	})
	markAvailable(t, c, ns, "slow")
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
}

// TestWaitPreemptedBySuspend: suspending a GitSync that waits (ten-minute
// timeout) is seen at once: it shows Suspended, and its objects' status
// changes no longer matter to it.
func TestWaitPreemptedBySuspend(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns, concurrent: 1})
	ctx := context.Background()
	r := newRepo(t)
	r.commit(map[string]string{"deploy/web.yaml": deployment("web", "example.invalid/stuck:1")})
	gs := newGitSync(ns, "sus", r.url(), withWait(10*time.Minute))
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	g := waitingFor(t, c, key, "Deployment/"+ns+"/web")
	p := client.MergeFrom(g.DeepCopy())
	g.Spec.Suspend = true
	if err := c.Patch(ctx, g, p); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		r := meta.FindStatusCondition(g.Status.Conditions, v1.ConditionReady)
		return r.Reason == v1.ReasonSuspended && meta.FindStatusCondition(g.Status.Conditions, v1.ConditionReconciling) == nil
	})
}

// TestWaitReadyFromTheWrite: with spec.wait, a revision of objects that
// are ready as written (a ConfigMap, a ServiceAccount, a headless
// Service) is Ready from the reconcile that applies it, created and then
// configured: the GitSync's status never says it waits for their health.
// Judged only from the watch cache, each revision was first reported
// WaitingForHealth ("just applied") and turned Ready on a second reconcile,
// which queues behind every other GitSync's work.
func TestWaitReadyFromTheWrite(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns, concurrent: 1})
	ctx := context.Background()
	seen := watchReadyReasons(t, ns)
	r := newRepo(t)
	files := map[string]string{
		"deploy/cm.yaml": configMap("settings", "one"),
		"deploy/sa.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n",
		"deploy/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: app\nspec:\n  clusterIP: None\n" +
			"  selector: {app: app}\n  ports: [{port: 80}]\n",
	}
	first := r.commit(files)
	gs := newGitSync(ns, "fast", r.url(), withWait(10*time.Minute))
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, first)
	})
	files["deploy/cm.yaml"] = configMap("settings", "two")
	second := r.commit(files)
	a.rec.Trigger(key)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, second)
	})
	if cm, err := getCM(t, c, ns, "settings"); err != nil || cm.Data["value"] != "two" {
		t.Fatalf("ConfigMap settings = %v, %v; want value two", cm.Data, err)
	}
	eventually(t, "the watch to see the second revision applied", func(context.Context) (bool, error) {
		return slices.ContainsFunc(seen.get(), func(s string) bool { return strings.Contains(s, second) }), nil
	})
	for _, s := range seen.get() {
		if strings.HasPrefix(s, v1.ReasonWaitingForHealth+"@") {
			t.Errorf("Ready reasons written (reason@lastAppliedRevision): %v; want none %s (the objects were ready as written)", seen.get(), v1.ReasonWaitingForHealth)
			break
		}
	}
}

// readyReasons are the Ready reasons a watch saw written, in order, each
// as "reason@lastAppliedRevision".
type readyReasons struct {
	mu      sync.Mutex
	reasons []string
}

func (r *readyReasons) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reasons)
}

// watchReadyReasons records the Ready reason of every GitSync write in ns
// from now on.
func watchReadyReasons(t *testing.T, ns string) *readyReasons {
	t.Helper()
	rr := &readyReasons{}
	watchGitSyncs(t, ns, func(gs *v1.GitSync) {
		if cond := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReady); cond != nil {
			rr.mu.Lock()
			rr.reasons = append(rr.reasons, cond.Reason+"@"+gs.Status.LastAppliedRevision)
			rr.mu.Unlock()
		}
	})
	return rr
}
