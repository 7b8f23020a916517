package controller_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// TestRestartWarmsInventoryKinds: an agent starting over a GitSync whose
// inventory holds a ConfigMap starts reading ConfigMaps beside its first
// reconcile, not inside it: here that reconcile fails before it reads
// anything (the source is gone), and the ConfigMaps are listed anyway.
//
// Checked without warmKinds: no ConfigMap request in a minute.
func TestRestartWarmsInventoryKinds(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	r := newRepo(t)
	r.commit(map[string]string{"deploy/cm.yaml": configMap("warm", "one")})
	gs := newGitSync(ns, "warm", r.url())
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	first := startAgent(t, agentOptions{namespace: ns})
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	first.stop()

	if err := c.Get(ctx, key, gs); err != nil {
		t.Fatal(err)
	}
	gs.Spec.Source.URL = "file:///nonexistent/repository.git"
	if err := c.Update(ctx, gs); err != nil {
		t.Fatal(err)
	}
	second := startAgent(t, agentOptions{namespace: ns})
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionFalse, nil)
	eventually(t, "the restarted agent to list ConfigMaps", func(context.Context) (bool, error) {
		for _, req := range second.count.requests() {
			if strings.HasPrefix(req, "GET /api/v1/configmaps") || strings.HasPrefix(req, "GET /api/v1/namespaces/"+ns+"/configmaps") {
				return true, nil
			}
		}
		return false, nil
	})
}
