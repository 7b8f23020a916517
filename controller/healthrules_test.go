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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/health/rules"
)

// customResource is a manifest of kind in group/v1, without a status: its
// operator (the test) writes one later.
func customResource(group, kind, name string) string {
	return fmt.Sprintf("apiVersion: %s/v1\nkind: %s\nmetadata:\n  name: %s\nspec:\n  size: 1\n", group, kind, name)
}

// setPhase writes status.phase as the kind's operator would.
func setPhase(t *testing.T, c client.Client, group, kind, ns, name, phase string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(group + "/v1")
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	patch := []byte(fmt.Sprintf(`{"status":{"phase":%q}}`, phase))
	if err := c.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("set %s %s/%s phase %s: %v", kind, ns, name, phase, err)
	}
}

func stalledWith(reason string, says ...string) func(*v1.GitSync) bool {
	return func(g *v1.GitSync) bool {
		s := meta.FindStatusCondition(g.Status.Conditions, v1.ConditionStalled)
		if s == nil || s.Reason != reason {
			return false
		}
		for _, part := range says {
			if !strings.Contains(s.Message, part) {
				return false
			}
		}
		return true
	}
}

// TestHealthRulesJudgeCustomResources: with spec.wait, a CEL rule judges
// custom resources kstatus calls Current as soon as they exist (no
// conditions). A Database the rule judges Failed stalls the GitSync at
// once (the timeout is ten minutes) naming it; judged Current, the
// GitSync turns Ready, and so does a GitSync that depends on it, which
// waited until then. The GitSync's own Database rule wins over the
// agent's (which never judges one ready); the agent's Cache rule judges
// Caches, which the GitSync has no rule for.
func TestHealthRulesJudgeCustomResources(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	group := ns + ".health.test"
	createCRD(t, c, testCRD(group, "Database"))
	createCRD(t, c, testCRD(group, "Cache"))
	startAgent(t, agentOptions{namespace: ns, healthRules: []rules.Rule{
		{APIVersion: group + "/v1", Kind: "Database", Current: "false"},
		{APIVersion: group + "/v1", Kind: "Cache", Current: "self.status.?phase.orValue('') == 'Warm'"},
	}})
	ctx := context.Background()
	r := newRepo(t)
	r.commit(map[string]string{
		"deploy/db.yaml":    customResource(group, "Database", "db"),
		"deploy/cache.yaml": customResource(group, "Cache", "cache"),
		"other/cm.yaml":     configMap("after-db", "x"),
	})
	gs := newGitSync(ns, "db", r.url(), withWait(10*time.Minute), func(g *v1.GitSync) {
		g.Spec.HealthChecks = []v1.HealthCheck{{
			APIVersion: group + "/v1", Kind: "Database",
			Failed:  "self.status.phase == 'Failed'",
			Current: "self.status.phase == 'Ready'",
		}}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	dbSubject := fmt.Sprintf("Database.%s/%s/db", group, ns)
	waitingFor(t, c, key, dbSubject)
	dependent := newGitSync(ns, "after-db", r.url(), func(g *v1.GitSync) {
		g.Spec.Source.Path = "other"
		g.Spec.DependsOn = []v1.DependencyReference{{Name: "db"}}
	})
	if err := c.Create(ctx, dependent); err != nil {
		t.Fatal(err)
	}
	depKey := client.ObjectKeyFromObject(dependent)
	waitCondition(t, c, depKey, v1.ConditionReady, metav1.ConditionFalse, func(g *v1.GitSync) bool {
		return meta.FindStatusCondition(g.Status.Conditions, v1.ConditionReady).Reason == v1.ReasonDependencyNotReady
	})

	setPhase(t, c, group, "Database", ns, "db", "Failed")
	waitCondition(t, c, key, v1.ConditionStalled, metav1.ConditionTrue,
		stalledWith(v1.ReasonHealthCheckFailed, dbSubject+" failed", "health rule "+group+"/Database: failed is true"))

	setPhase(t, c, group, "Database", ns, "db", "Ready")
	// The Cache still waits for the agent's rule.
	waitingFor(t, c, key, fmt.Sprintf("Cache.%s/%s/cache", group, ns))
	if _, err := getCM(t, c, ns, "after-db"); !apierrors.IsNotFound(err) {
		t.Errorf("the dependent applied its ConfigMap before its dependency was Ready: %v", err)
	}
	setPhase(t, c, group, "Cache", ns, "cache", "Warm")
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	waitCondition(t, c, depKey, v1.ConditionReady, metav1.ConditionTrue, nil)
	if _, err := getCM(t, c, ns, "after-db"); err != nil {
		t.Errorf("the dependent's ConfigMap once its dependency was Ready: %v", err)
	}
}

// TestHealthRuleErrorsStall: a rule that does not compile stalls the
// GitSync with HealthCheckInvalid before anything is applied; one that
// fails to evaluate on an object (comparing a string with a number)
// stalls it naming the rule, the expression and the object, and never
// makes it Ready.
func TestHealthRuleErrorsStall(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	group := ns + ".health.test"
	createCRD(t, c, testCRD(group, "Queue"))
	startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	r := newRepo(t)
	r.commit(map[string]string{"deploy/q.yaml": customResource(group, "Queue", "q")})
	gs := newGitSync(ns, "q", r.url(), withWait(10*time.Minute), func(g *v1.GitSync) {
		g.Spec.HealthChecks = []v1.HealthCheck{{APIVersion: group + "/v1", Kind: "Queue", Current: "self.status.("}}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionStalled, metav1.ConditionTrue,
		stalledWith(v1.ReasonHealthCheckInvalid, "spec.healthChecks", "health rule "+group+"/Queue current"))
	q := &unstructured.Unstructured{}
	q.SetAPIVersion(group + "/v1")
	q.SetKind("Queue")
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "q"}, q); !apierrors.IsNotFound(err) {
		t.Errorf("the Queue was applied under a rule that does not compile: %v", err)
	}

	// A rule that compiles (status is dyn) but fails on the object.
	if err := c.Get(ctx, key, gs); err != nil {
		t.Fatal(err)
	}
	gs.Spec.HealthChecks[0].Current = "self.status.phase > 3"
	if err := c.Update(ctx, gs); err != nil {
		t.Fatal(err)
	}
	// No status yet: the field is missing, which is waiting, not an error.
	waitingFor(t, c, key, fmt.Sprintf("Queue.%s/%s/q", group, ns))
	setPhase(t, c, group, "Queue", ns, "q", "Ready")
	got := waitCondition(t, c, key, v1.ConditionStalled, metav1.ConditionTrue,
		stalledWith(v1.ReasonHealthCheckInvalid, "health rule "+group+"/Queue current on "+fmt.Sprintf("Queue.%s/%s/q", group, ns), "no such overload"))
	if ready := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionReady); ready.Status == metav1.ConditionTrue {
		t.Errorf("Ready with a rule that failed to evaluate: %+v", ready)
	}
}

// TestDependsOnReadyExpr: a readyExpr decides when a dependency is ready
// in place of its Ready condition. db is Ready at once, but app's
// readyExpr asks for db's interval to be 2h: app applies nothing until db's
// spec says so, then it is applied. A readyExpr on another namespace's
// GitSync, and one that does not compile, stall with HealthCheckInvalid.
func TestDependsOnReadyExpr(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	r := newRepo(t)
	r.commit(map[string]string{"db/cm.yaml": configMap("db", "1"), "app/cm.yaml": configMap("app", "1")})
	db := newGitSync(ns, "db", r.url(), withPath("db"))
	if err := c.Create(ctx, db); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, client.ObjectKeyFromObject(db), v1.ConditionReady, metav1.ConditionTrue, nil)
	withReadyExpr := func(depNS, expr string) func(*v1.GitSync) {
		return func(g *v1.GitSync) {
			g.Spec.DependsOn = []v1.DependencyReference{{Name: "db", Namespace: depNS, ReadyExpr: expr}}
		}
	}
	app := newGitSync(ns, "app", r.url(), withPath("app"), withReadyExpr("", "dep.spec.interval == '2h0m0s' && self.metadata.name == 'app'"))
	elsewhere := newGitSync(ns, "elsewhere", r.url(), withPath("app"), withReadyExpr("other", "true"))
	broken := newGitSync(ns, "broken", r.url(), withPath("app"), withReadyExpr("", "dep.("))
	for _, g := range []*v1.GitSync{app, elsewhere, broken} {
		if err := c.Create(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	heldBy(t, c, client.ObjectKeyFromObject(app), ns+"/db: its readyExpr is not true yet")
	if _, err := getCM(t, c, ns, "app"); !apierrors.IsNotFound(err) {
		t.Errorf("app applied before its readyExpr held: %v", err)
	}
	waitCondition(t, c, client.ObjectKeyFromObject(elsewhere), v1.ConditionStalled, metav1.ConditionTrue,
		stalledWith(v1.ReasonHealthCheckInvalid, "spec.dependsOn[0].readyExpr", "another namespace"))
	waitCondition(t, c, client.ObjectKeyFromObject(broken), v1.ConditionStalled, metav1.ConditionTrue,
		stalledWith(v1.ReasonHealthCheckInvalid, "spec.dependsOn[0].readyExpr", "Syntax error"))

	if err := c.Get(ctx, client.ObjectKeyFromObject(db), db); err != nil {
		t.Fatal(err)
	}
	db.Spec.Interval = metav1.Duration{Duration: 2 * time.Hour}
	if err := c.Update(ctx, db); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, client.ObjectKeyFromObject(app), v1.ConditionReady, metav1.ConditionTrue, nil)
	if _, err := getCM(t, c, ns, "app"); err != nil {
		t.Errorf("app's ConfigMap once its readyExpr held: %v", err)
	}
}
