package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

func dependsOn(names ...string) func(*v1.GitSync) {
	return func(g *v1.GitSync) {
		g.Spec.DependsOn = nil
		for _, n := range names {
			g.Spec.DependsOn = append(g.Spec.DependsOn, v1.DependencyReference{Name: n})
		}
	}
}

func withPath(p string) func(*v1.GitSync) {
	return func(g *v1.GitSync) { g.Spec.Source.Path = p }
}

// heldBy waits until key is Reconciling with reason DependencyNotReady and
// a Ready message holding every word, and returns it.
func heldBy(t *testing.T, c client.Client, key client.ObjectKey, words ...string) *v1.GitSync {
	t.Helper()
	return waitCondition(t, c, key, v1.ConditionReconciling, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		r := meta.FindStatusCondition(g.Status.Conditions, v1.ConditionReady)
		rc := meta.FindStatusCondition(g.Status.Conditions, v1.ConditionReconciling)
		return r != nil && r.Status == metav1.ConditionFalse && r.Reason == v1.ReasonDependencyNotReady &&
			rc.Reason == v1.ReasonDependencyNotReady && containsAll(r.Message, words)
	})
}

// TestDependsOnWaitsForDependency: app depends on db. While db does not
// exist, and then while db waits for its Deployment's health, app applies
// nothing and says why; when db turns Ready, app is applied. The interval is
// an hour and holding is no error (no backoff retries), so only the watch
// of db can have started app's sync.
func TestDependsOnWaitsForDependency(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	r := newRepo(t)
	r.commit(map[string]string{"db/web.yaml": deployment("db", "example.invalid/db:1"), "app/cm.yaml": configMap("app", "1")})

	app := newGitSync(ns, "app", r.url(), withPath("app"), dependsOn("db"))
	if err := c.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	appKey := client.ObjectKeyFromObject(app)
	heldBy(t, c, appKey, ns+"/db does not exist")

	db := newGitSync(ns, "db", r.url(), withPath("db"), withWait(10*time.Minute))
	if err := c.Create(ctx, db); err != nil {
		t.Fatal(err)
	}
	waitingFor(t, c, client.ObjectKeyFromObject(db), "Deployment/"+ns+"/db")
	g := heldBy(t, c, appKey, ns+"/db is not Ready (WaitingForHealth)", "Deployment/"+ns+"/db")
	if g.Status.LastAttemptedRevision != "" || g.Status.Inventory != nil {
		t.Errorf("held GitSync attempted %q with inventory %+v, want nothing", g.Status.LastAttemptedRevision, g.Status.Inventory)
	}
	if _, err := getCM(t, c, ns, "app"); !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap app while its dependency is not Ready: err = %v, want not found", err)
	}

	markAvailable(t, c, ns, "db")
	marked := time.Now()
	waitCondition(t, c, appKey, v1.ConditionReady, metav1.ConditionTrue, nil)
	t.Logf("dependent Ready %s after its dependency's Deployment became available (a figure, not asserted)", time.Since(marked).Round(time.Millisecond))
	if _, err := getCM(t, c, ns, "app"); err != nil {
		t.Fatalf("ConfigMap app after db turned Ready: %v", err)
	}
	if n := a.reconciles(t, "retry"); n != 0 {
		t.Errorf("%d reconciles ended in a retry, want 0: holding is no failure", n)
	}
}

// TestDependsOnCycle: a and b depend on each other: both are Stalled naming
// the cycle and apply nothing. When b drops its dependsOn, b syncs, and a
// (requeued by b's change) follows.
func TestDependsOnCycle(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	r := newRepo(t)
	r.commit(map[string]string{"a/cm.yaml": configMap("a", "1"), "b/cm.yaml": configMap("b", "1")})
	ga := newGitSync(ns, "a", r.url(), withPath("a"), dependsOn("b"))
	gb := newGitSync(ns, "b", r.url(), withPath("b"), dependsOn("a"))
	for _, g := range []*v1.GitSync{ga, gb} {
		if err := c.Create(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []struct{ key, cycle string }{
		{"a", ns + "/a -> " + ns + "/b -> " + ns + "/a"},
		{"b", ns + "/b -> " + ns + "/a -> " + ns + "/b"},
	} {
		waitCondition(t, c, client.ObjectKey{Namespace: ns, Name: want.key}, v1.ConditionStalled, metav1.ConditionTrue, func(g *v1.GitSync) bool {
			s := meta.FindStatusCondition(g.Status.Conditions, v1.ConditionStalled)
			return s.Reason == v1.ReasonDependencyCycle && strings.Contains(s.Message, want.cycle)
		})
	}
	for _, name := range []string{"a", "b"} {
		if _, err := getCM(t, c, ns, name); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s applied by a GitSync in a cycle: err = %v", name, err)
		}
	}

	p := client.MergeFrom(gb.DeepCopy())
	gb.Spec.DependsOn = nil
	if err := c.Patch(ctx, gb, p); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, client.ObjectKeyFromObject(gb), v1.ConditionReady, metav1.ConditionTrue, nil)
	waitCondition(t, c, client.ObjectKeyFromObject(ga), v1.ConditionReady, metav1.ConditionTrue, nil)
	if _, err := getCM(t, c, ns, "a"); err != nil {
		t.Errorf("ConfigMap a after the cycle was broken: %v", err)
	}
}

// inWave is a manifest with a gitsync.dev/wave annotation added.
func inWave(manifest, wave string) string {
	return strings.Replace(manifest, "metadata:\n", "metadata:\n  annotations: {\"gitsync.dev/wave\": \""+wave+"\"}\n", 1)
}

// TestWavesWaitForHealth: with spec.wait, a ConfigMap in wave 1 is created
// only after the Deployment of wave 0 became available, and the object
// that left Git is pruned only after the last wave applied. While wave 0
// is not ready the GitSync waits naming the wave.
func TestWavesWaitForHealth(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	r := newRepo(t)
	r.commit(map[string]string{"deploy/old.yaml": configMap("old", "1")})
	gs := newGitSync(ns, "waves", r.url(), withWait(10*time.Minute))
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)

	r.commit(map[string]string{
		"deploy/old.yaml":   "",
		"deploy/web.yaml":   deployment("web", "example.invalid/web:1"),
		"deploy/after.yaml": inWave(configMap("after", "1"), "1"),
	})
	request(t, c, key, "second")
	g := waitingFor(t, c, key, "Deployment/"+ns+"/web")
	if msg := meta.FindStatusCondition(g.Status.Conditions, v1.ConditionReady).Message; !strings.Contains(msg, "wave 1 is applied once wave 0 is ready") {
		t.Errorf("waiting message %q does not name the waves", msg)
	}
	if _, err := getCM(t, c, ns, "after"); !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap of wave 1 while wave 0 is not ready: err = %v, want not found", err)
	}
	if _, err := getCM(t, c, ns, "old"); err != nil {
		t.Fatalf("ConfigMap old pruned before the last wave applied: %v", err)
	}
	if n := a.applied(t, "", "ConfigMap"); n != 0 {
		t.Errorf("gitsync_applied_objects_total{action=\"\"} = %v for the held ConfigMap, want no such series", n)
	}

	markAvailable(t, c, ns, "web")
	marked := time.Now()
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	t.Logf("wave 1 applied and Ready %s after wave 0 became available (a figure, not asserted)", time.Since(marked).Round(time.Millisecond))
	if _, err := getCM(t, c, ns, "after"); err != nil {
		t.Fatalf("ConfigMap of wave 1 after wave 0 became ready: %v", err)
	}
	if _, err := getCM(t, c, ns, "old"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap old after every wave applied: err = %v, want pruned", err)
	}
}

// TestInvalidWave: a wave annotation that is not an integer stalls the
// GitSync naming the object and the value, and nothing of the set is
// applied.
func TestInvalidWave(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	r := newRepo(t)
	r.commit(map[string]string{"deploy/a.yaml": configMap("a", "1"), "deploy/b.yaml": inWave(configMap("b", "1"), "soon")})
	gs := newGitSync(ns, "bad-wave", r.url())
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, client.ObjectKeyFromObject(gs), v1.ConditionStalled, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		s := meta.FindStatusCondition(g.Status.Conditions, v1.ConditionStalled)
		return s.Reason == v1.ReasonRenderFailed && containsAll(s.Message, []string{"ConfigMap/" + ns + "/b", `gitsync.dev/wave annotation "soon"`})
	})
	if _, err := getCM(t, c, ns, "a"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap a applied although the set has an invalid wave: err = %v", err)
	}
}

// TestDependsOnConvergedCostsNothing: checking a dependency reads the
// GitSync cache only, so a converged dependent's resyncs still send no
// request at all.
func TestDependsOnConvergedCostsNothing(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	r := newRepo(t)
	r.commit(map[string]string{"db/cm.yaml": configMap("db", "1"), "app/cm.yaml": configMap("app", "1")})
	db := newGitSync(ns, "db", r.url(), withPath("db"))
	if err := c.Create(ctx, db); err != nil {
		t.Fatal(err)
	}
	dbKey := client.ObjectKeyFromObject(db)
	waitCondition(t, c, dbKey, v1.ConditionReady, metav1.ConditionTrue, nil)
	app := newGitSync(ns, "app", r.url(), withPath("app"), dependsOn("db"))
	if err := c.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	appKey := client.ObjectKeyFromObject(app)
	waitCondition(t, c, appKey, v1.ConditionReady, metav1.ConditionTrue, nil)
	a.settle(t, c, dbKey, 2)
	a.settle(t, c, appKey, 2)

	for i := range 3 {
		done := a.reconciles(t, "success")
		writes, reads := a.count.writes.Load(), a.count.reads.Load()
		mark := len(a.count.requests())
		poke(t, c, appKey, fmt.Sprint("resync-", i))
		eventually(t, "resync reconcile", func(context.Context) (bool, error) { return a.reconciles(t, "success") > done, nil })
		if w, rd := a.count.writes.Load()-writes, a.count.reads.Load()-reads; w != 0 || rd != 0 {
			t.Errorf("resync %d of a dependent sent %d writes and %d non-watch reads, want 0 and 0: %v", i, w, rd, a.count.requests()[mark:])
		}
	}
}
