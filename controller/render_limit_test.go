package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// TestObjectCapPerGitSync: a GitSync whose revision renders more objects
// than its spec.maxObjects is Stalled naming the count and the cap, and
// nothing is applied; a spec.maxObjects above the agent's cap is Stalled as
// InvalidSpec naming both numbers; raising the GitSync's cap to the count
// syncs it.
//
// Checked by removing the count comparison in getCapped (the first step then
// goes Ready) and the upper bound in maxObjectsOf (the second step then
// goes Ready).
func TestObjectCapPerGitSync(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	r := newRepo(t)
	var all strings.Builder
	for i := range 6 {
		fmt.Fprintf(&all, "%s---\n", configMap(fmt.Sprintf("cm%d", i), "1"))
	}
	r.commit(map[string]string{"deploy/all.yaml": all.String()})

	gs := newGitSync(ns, "capped", r.url(), func(g *v1.GitSync) { g.Spec.MaxObjects = ptrTo(int32(5)) })
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	got := waitCondition(t, c, key, v1.ConditionStalled, metav1.ConditionTrue, nil)
	cond := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionStalled)
	if cond.Reason != v1.ReasonRenderFailed || !strings.Contains(cond.Message, "6 objects, more than 5") || !strings.Contains(cond.Message, "spec.maxObjects") {
		t.Errorf("Stalled = %s %q, want %s naming 6 objects, the cap 5 and spec.maxObjects", cond.Reason, cond.Message, v1.ReasonRenderFailed)
	}
	if _, err := getCM(t, c, ns, "cm0"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap cm0 of a refused revision: %v, want NotFound", err)
	}

	setMaxObjects(t, c, key, 20_000)
	got = waitCondition(t, c, key, v1.ConditionStalled, metav1.ConditionTrue, nil)
	cond = meta.FindStatusCondition(got.Status.Conditions, v1.ConditionStalled)
	if cond.Reason != v1.ReasonInvalidSpec || !strings.Contains(cond.Message, "20000") || !strings.Contains(cond.Message, "10000") {
		t.Errorf("Stalled = %s %q, want %s naming 20000 and the agent's 10000", cond.Reason, cond.Message, v1.ReasonInvalidSpec)
	}

	setMaxObjects(t, c, key, 6)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	if _, err := getCM(t, c, ns, "cm5"); err != nil {
		t.Errorf("ConfigMap cm5 after raising the cap: %v", err)
	}
}

func setMaxObjects(t *testing.T, c client.Client, key client.ObjectKey, n int32) {
	t.Helper()
	gs := &v1.GitSync{}
	if err := c.Get(context.Background(), key, gs); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(gs.DeepCopy())
	gs.Spec.MaxObjects = &n
	if err := c.Patch(context.Background(), gs, patch); err != nil {
		t.Fatal(err)
	}
}
