package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// discoveryRequests counts the discovery GETs among requests ("GET /api",
// "GET /apis/apps/v1", ...): paths of at most /apis/GROUP/VERSION.
func discoveryRequests(requests []string) (n int, list []string) {
	for _, r := range requests {
		path, ok := strings.CutPrefix(r, "GET ")
		if !ok {
			continue
		}
		parts := strings.Split(strings.Trim(path, "/"), "/")
		if parts[0] == "api" && len(parts) <= 2 || parts[0] == "apis" && len(parts) <= 3 {
			n++
			list = append(list, path)
		}
	}
	return n, list
}

// TestGitSyncsShareDiscovery: GitSyncs of one agent share the manager's
// REST mapper and HTTP client, so GitSyncs after the first cause no
// discovery requests of their own; one impersonating a ServiceAccount
// still writes as that ServiceAccount (a separate HTTP client), not as the
// agent.
func TestGitSyncsShareDiscovery(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()

	first := newRepo(t)
	first.commit(map[string]string{"deploy/a.yaml": configMap("first", "1")})
	gs := newGitSync(ns, "first", first.url())
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, client.ObjectKeyFromObject(gs), v1.ConditionReady, metav1.ConditionTrue, nil)
	before, _ := discoveryRequests(a.count.requests())
	if before == 0 {
		t.Fatalf("test bug: no discovery request counted for the first GitSync: %v", a.count.requests())
	}
	mark := len(a.count.requests())

	const more = 4
	for i := range more {
		r := newRepo(t)
		r.commit(map[string]string{"deploy/a.yaml": configMap(fmt.Sprint("more-", i), "1")})
		if err := c.Create(ctx, newGitSync(ns, fmt.Sprint("more-", i), r.url())); err != nil {
			t.Fatal(err)
		}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "powerless", Namespace: ns}}
	if err := c.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	r := newRepo(t)
	r.commit(map[string]string{"deploy/a.yaml": configMap("impersonated", "1")})
	imp := newGitSync(ns, "impersonated", r.url(), func(g *v1.GitSync) { g.Spec.ServiceAccountName = "powerless" })
	if err := c.Create(ctx, imp); err != nil {
		t.Fatal(err)
	}
	for i := range more {
		waitCondition(t, c, client.ObjectKey{Namespace: ns, Name: fmt.Sprint("more-", i)}, v1.ConditionReady, metav1.ConditionTrue, nil)
	}
	g := waitCondition(t, c, client.ObjectKeyFromObject(imp), v1.ConditionStalled, metav1.ConditionTrue, nil)
	if ready := meta.FindStatusCondition(g.Status.Conditions, v1.ConditionReady); ready.Reason != v1.ReasonForbidden {
		t.Errorf("impersonating GitSync Ready = %+v, want Forbidden: it must not write as the agent", ready)
	}
	if _, err := getCM(t, c, ns, "impersonated"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap of the impersonating GitSync applied: %v", err)
	}
	if n, list := discoveryRequests(a.count.requests()[mark:]); n != 0 {
		t.Errorf("%d more GitSyncs sent %d discovery requests, want 0 (one mapper per cluster): %v", more+1, n, list)
	}
}
