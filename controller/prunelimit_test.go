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

// TestPruneLimitStallsUntilAnnotated: a commit that removes most of a large
// set is not pruned by the agent's default share limit; the GitSync is
// Stalled saying how to proceed, every object stays, and the annotation
// lets that one removal through.
func TestPruneLimitStallsUntilAnnotated(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	r := newRepo(t)
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("deploy/cm%02d.yaml", i)] = configMap(fmt.Sprintf("cm%02d", i), "1")
	}
	r.commit(files)
	gs := newGitSync(ns, "big", r.url())
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)

	removed := map[string]string{}
	for i := range 15 {
		removed[fmt.Sprintf("deploy/cm%02d.yaml", i)] = ""
	}
	commit := r.commit(removed)
	request(t, c, key, "mass-removal")
	stalledGS := waitCondition(t, c, key, v1.ConditionStalled, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAttemptedRevision, commit)
	})
	msg := meta.FindStatusCondition(stalledGS.Status.Conditions, v1.ConditionStalled).Message
	if !strings.Contains(msg, "15 of 20") || !strings.Contains(msg, v1.AnnotationPruneMaxShare) {
		t.Errorf("Stalled message %q should give the counts and name the annotation", msg)
	}
	for i := range 20 {
		if _, err := getCM(t, c, ns, fmt.Sprintf("cm%02d", i)); err != nil {
			t.Errorf("ConfigMap cm%02d deleted despite the refused prune: %v", i, err)
		}
	}

	got := &v1.GitSync{}
	if err := c.Get(context.Background(), key, got); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(got.DeepCopy())
	metav1.SetMetaDataAnnotation(&got.ObjectMeta, v1.AnnotationPruneMaxShare, "1")
	if err := c.Patch(context.Background(), got, patch); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, commit)
	})
	eventually(t, "15 ConfigMaps pruned", func(ctx context.Context) (bool, error) {
		for i := range 15 {
			if _, err := getCM(t, c, ns, fmt.Sprintf("cm%02d", i)); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
	if _, err := getCM(t, c, ns, "cm19"); err != nil {
		t.Errorf("ConfigMap cm19 still in Git but gone: %v", err)
	}
}
