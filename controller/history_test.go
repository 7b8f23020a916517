package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// secretManifest is a Secret named name holding value.
func secretManifest(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\nstringData:\n  value: %q\n", name, value)
}

// TestHistory: status.history gets one entry per revision synced, newest
// first, with the outcome (Succeeded, or the failure's reason) and a
// digest of the objects that a Secret's data does not enter; a poll that
// changes nothing adds nothing; at most v1.MaxHistory entries are kept.
//
// Checked: with recordHistory not comparing with the newest entry, the
// requested reconcile of a converged GitSync adds an entry and the test
// fails.
func TestHistory(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	r := newRepo(t)
	first := r.commit(map[string]string{"deploy/a.yaml": configMap("a", "1"), "deploy/s.yaml": secretManifest("s", "one")})
	gs := newGitSync(ns, "app", r.url())
	ctx := context.Background()
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	step := 0
	sync := func(files map[string]string, ready bool) (string, *v1.GitSync) {
		t.Helper()
		commit := ""
		if files != nil {
			commit = r.commit(files)
		}
		step++
		request(t, c, key, fmt.Sprintf("step-%d", step))
		status := metav1.ConditionTrue
		if !ready {
			status = metav1.ConditionFalse
		}
		return commit, waitCondition(t, c, key, v1.ConditionReady, status, func(g *v1.GitSync) bool {
			return g.Status.LastHandledRequestedAt == fmt.Sprintf("step-%d", step) && (commit == "" || strings.Contains(g.Status.LastAttemptedRevision, commit))
		})
	}
	got := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	if h := got.Status.History; len(h) != 1 || !strings.Contains(h[0].Revision, first) || h[0].Outcome != v1.HistorySucceeded ||
		!strings.HasPrefix(h[0].Digest, "sha256:") || h[0].Time.IsZero() {
		t.Fatalf("history after the first sync: %+v", h)
	}
	d1 := got.Status.History[0].Digest

	_, got = sync(nil, true) // nothing changed
	if len(got.Status.History) != 1 {
		t.Fatalf("a poll that changed nothing added to the history: %+v", got.Status.History)
	}

	secretOnly, got := sync(map[string]string{"deploy/s.yaml": secretManifest("s", "two")}, true)
	if h := got.Status.History; len(h) != 2 || !strings.Contains(h[0].Revision, secretOnly) || h[0].Digest != d1 {
		t.Errorf("a change of Secret data alone: history %+v; want a new entry with the digest unchanged (%s)", h, d1)
	}
	_, got = sync(map[string]string{"deploy/a.yaml": configMap("a", "2")}, true)
	if h := got.Status.History; len(h) != 3 || h[0].Digest == d1 {
		t.Errorf("a change of a ConfigMap: history %+v; want a new digest", h)
	}
	broken, got := sync(map[string]string{"deploy/bad.yaml": "kind: [unclosed\n"}, false)
	if h := got.Status.History; len(h) != 4 || !strings.Contains(h[0].Revision, broken) || h[0].Outcome != v1.ReasonRenderFailed || h[0].Digest != "" {
		t.Errorf("a revision that does not render: history head %+v, want RenderFailed without digest", h[0])
	}
	for i := range v1.MaxHistory {
		_, got = sync(map[string]string{"deploy/bad.yaml": "", "deploy/a.yaml": configMap("a", fmt.Sprint(10+i))}, true)
	}
	if h := got.Status.History; len(h) != v1.MaxHistory || h[0].Outcome != v1.HistorySucceeded || h[0].Revision != got.Status.LastAppliedRevision {
		t.Errorf("after %d more revisions: %d entries, head %+v; want %d, the last applied first", v1.MaxHistory, len(h), h[0], v1.MaxHistory)
	}
	for _, e := range got.Status.History {
		if strings.Contains(e.Digest+e.Revision+e.Outcome, "two") {
			t.Errorf("history entry shows a Secret value: %+v", e)
		}
	}
}
