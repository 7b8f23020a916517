package controller_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/orphans"
	"gitsync.dev/gitsync/internal/testenv"
)

// assertNoOrphans fails the test when an object carrying the owner labels
// of a GitSync in ns is recorded in no inventory (see orphans.Find).
func assertNoOrphans(t *testing.T, ns string) {
	t.Helper()
	found, err := orphans.Find(context.Background(), env.Config, ns)
	if err != nil {
		t.Fatalf("look for orphans: %v", err)
	}
	if len(found) > 0 {
		t.Errorf("objects with owner labels outside every inventory (orphans):\n  %s", strings.Join(found, "\n  "))
	}
}

// faultCase is one GitSync synced by an in-process agent that reaches the
// apiserver through a fault proxy.
type faultCase struct {
	c     client.Client
	ns    string
	key   client.ObjectKey
	repo  *repo
	proxy *testenv.FaultProxy
	agent *agent
	first string // the first commit, synced before the test's fault
}

// startFaultCase commits files, starts an agent behind a fault proxy and
// waits until the GitSync "app" is Ready at that commit. Failed syncs are
// retried after a second.
func startFaultCase(t *testing.T, files map[string]string, mutate ...func(*v1.GitSync)) *faultCase {
	t.Helper()
	f := &faultCase{c: setup(t), ns: env.Namespace(t), repo: newRepo(t), proxy: env.NewFaultProxy(t)}
	f.agent = startAgent(t, agentOptions{namespace: f.ns, config: f.proxy.Config})
	f.first = f.repo.commit(files)
	gs := newGitSync(f.ns, "app", f.repo.url(), append([]func(*v1.GitSync){func(g *v1.GitSync) {
		g.Spec.RetryInterval = &metav1.Duration{Duration: 1e9}
	}}, mutate...)...)
	if err := f.c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	f.key = client.ObjectKeyFromObject(gs)
	f.waitApplied(t, f.first)
	return f
}

// waitApplied waits until the GitSync is Ready at commit.
func (f *faultCase) waitApplied(t *testing.T, commit string) *v1.GitSync {
	t.Helper()
	return waitCondition(t, f.c, f.key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, commit)
	})
}

// waitNotReady waits until Ready is False with reason and a message
// containing every one of words, and returns the GitSync.
func (f *faultCase) waitNotReady(t *testing.T, reason string, words ...string) *v1.GitSync {
	t.Helper()
	return waitCondition(t, f.c, f.key, v1.ConditionReady, metav1.ConditionFalse, func(g *v1.GitSync) bool {
		ready := meta.FindStatusCondition(g.Status.Conditions, v1.ConditionReady)
		if ready.Reason != reason {
			return false
		}
		for _, w := range words {
			if !strings.Contains(ready.Message, w) {
				return false
			}
		}
		return true
	})
}

// uids returns the UIDs of the named ConfigMaps in the case's namespace;
// each must exist.
func (f *faultCase) uids(t *testing.T, names ...string) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for _, n := range names {
		cm, err := getCM(t, f.c, f.ns, n)
		if err != nil {
			t.Fatalf("ConfigMap %s: %v", n, err)
		}
		out[n] = cm.UID
	}
	return out
}

// assertSurvived fails unless every ConfigMap of want still exists with the
// same UID (it was neither deleted nor deleted and recreated).
func (f *faultCase) assertSurvived(t *testing.T, want map[string]types.UID) {
	t.Helper()
	for n, uid := range want {
		cm, err := getCM(t, f.c, f.ns, n)
		switch {
		case err != nil:
			t.Errorf("ConfigMap %s still in Git was deleted: %v", n, err)
		case cm.UID != uid || cm.DeletionTimestamp != nil:
			t.Errorf("ConfigMap %s uid %s (deleting %v), want %s: it was deleted and recreated", n, cm.UID, cm.DeletionTimestamp != nil, uid)
		}
	}
}

// configMapPath matches the URL path of ConfigMap name in ns.
func configMapPath(ns, name string) string {
	return "^/api/v1/namespaces/" + ns + "/configmaps/" + name + "$"
}

// gitSyncPath matches the URL path of GitSync name in ns, suffix being ""
// or "/status".
func gitSyncPath(ns, name, suffix string) string {
	return "^/apis/" + v1.GroupVersion.Group + "/" + v1.GroupVersion.Version + "/namespaces/" + ns + "/gitsyncs/" + name + suffix + "$"
}

// realWrite matches requests that are not dry runs.
var realWrite = map[string]string{"dryRun": ""}
