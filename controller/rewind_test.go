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

// TestRewindIsVisible: the branch is force-pushed back from B to A after
// the agent applied B. The GitSync gets one Warning event Rewritten naming
// the branch and both commits, Ready says Rewritten for A (also after a
// resync of A), the object only B had is pruned as usual, and the next
// fast-forward is an ordinary success again.
//
// Checked by removing the rewindOf call in sync.go: no event is recorded
// and Ready's reason stays ReconciliationSucceeded, so the test fails.
func TestRewindIsVisible(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	r := newRepo(t)
	commitA := r.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
	gs := newGitSync(ns, "app", r.url())
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)

	commitB := r.commit(map[string]string{"deploy/only-b.yaml": configMap("only-b", "1")})
	request(t, c, key, "to-b")
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, commitB)
	})
	if _, err := getCM(t, c, ns, "only-b"); err != nil {
		t.Fatalf("ConfigMap only-b after syncing B: %v", err)
	}

	r.git("reset", "-q", "--hard", commitA) // the remote's main is force-pushed back to A
	request(t, c, key, "back-to-a")
	got := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, commitA)
	})
	ready := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionReady)
	if ready.Reason != v1.ReasonRewritten || !strings.Contains(ready.Message, commitB[:12]) || !strings.Contains(ready.Message, commitA[:12]) {
		t.Errorf("Ready = %s %q, want %s naming %s and %s", ready.Reason, ready.Message, v1.ReasonRewritten, commitB[:12], commitA[:12])
	}
	eventually(t, "ConfigMap only-b pruned", func(context.Context) (bool, error) {
		_, err := getCM(t, c, ns, "only-b")
		return apierrors.IsNotFound(err), nil
	})
	var rewritten []corev1.Event
	eventually(t, "a Rewritten event", func(ctx context.Context) (bool, error) {
		rewritten = eventsWithReason(t, c, key, v1.ReasonRewritten)
		return len(rewritten) > 0, nil
	})
	want := fmt.Sprintf("branch main was rewritten from %s to %s", commitB[:12], commitA[:12])
	if ev := rewritten[0]; ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Message, want) {
		t.Errorf("event = %s %q, want a Warning containing %q", ev.Type, ev.Message, want)
	}

	// A resync of A keeps the reason and records no second event.
	before := a.reconciles(t, "success")
	request(t, c, key, "resync-a")
	eventually(t, "the resync of A returned", func(context.Context) (bool, error) {
		return a.reconciles(t, "success") > before, nil
	})
	got = waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	if reason := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionReady).Reason; reason != v1.ReasonRewritten {
		t.Errorf("Ready reason after a resync of A = %s, want %s", reason, v1.ReasonRewritten)
	}
	if n := len(eventsWithReason(t, c, key, v1.ReasonRewritten)); n != 1 {
		t.Errorf("%d Rewritten events, want 1 (one per rewind)", n)
	}

	commitC := r.commit(map[string]string{"deploy/c.yaml": configMap("c", "1")})
	request(t, c, key, "to-c")
	got = waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, commitC)
	})
	if reason := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionReady).Reason; reason != v1.ReasonSucceeded {
		t.Errorf("Ready reason after a fast-forward to C = %s, want %s", reason, v1.ReasonSucceeded)
	}
}

// eventsWithReason lists the events on the GitSync key with reason.
func eventsWithReason(t *testing.T, c client.Client, key client.ObjectKey, reason string) []corev1.Event {
	t.Helper()
	evs := &corev1.EventList{}
	if err := c.List(context.Background(), evs, client.InNamespace(key.Namespace)); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == "GitSync" && e.InvolvedObject.Name == key.Name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}
