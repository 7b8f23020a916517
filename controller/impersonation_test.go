package controller_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// TestServiceAccountImpersonation: a GitSync that names a ServiceAccount
// without permissions is stalled as Forbidden and applies nothing.
func TestServiceAccountImpersonation(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "powerless", Namespace: ns}}
	if err := c.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	r := newRepo(t)
	r.commit(map[string]string{"deploy/a.yaml": configMap("imp", "1")})
	gs := newGitSync(ns, "imp", r.url(), func(g *v1.GitSync) { g.Spec.ServiceAccountName = "powerless" })
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	g := waitCondition(t, c, client.ObjectKeyFromObject(gs), v1.ConditionStalled, metav1.ConditionTrue, nil)
	ready := meta.FindStatusCondition(g.Status.Conditions, v1.ConditionReady)
	if ready.Reason != v1.ReasonForbidden || !strings.Contains(ready.Message, "powerless") {
		t.Errorf("Ready = %+v, want Forbidden naming the ServiceAccount", ready)
	}
	if _, err := getCM(t, c, ns, "imp"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap applied despite impersonation: %v", err)
	}
}
