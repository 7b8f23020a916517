package controller_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gittest"
)

// gitHost serves one repository on loopback (internal/gittest) behind basic
// auth as user "git", whose password a test can change, and can be shut
// down.
type gitHost struct {
	*gittest.Server
	url string // the repository's URL
}

func newGitHost(t *testing.T, r *repo, pass string) *gitHost {
	t.Helper()
	root, name := filepath.Split(r.dir)
	s := gittest.New(t, root, gittest.Options{User: "git", Password: pass})
	return &gitHost{Server: s, url: s.URL + "/" + name}
}

// TestFaultGitSource: the Git side fails after a good sync. Each fault is
// reported in status under its own reason, the message saying what
// happened, nothing is pruned, the objects and the inventory of the last
// good revision are kept and lastAppliedRevision does not move. A fault
// retrying cannot fix (credentials rejected, branch gone) is Stalled, so
// `kubectl wait --for=condition=Ready` sees it; one that may pass (the
// host down) is Reconciling, retried with backoff.
//
// Checked: with a failed resolve swallowed (revision returning the last
// resolved revision and no error) every subtest fails waiting for
// Ready=False; with classifyFetch retrying every fetch failure as
// FetchFailed, every subtest fails waiting for its reason.
func TestFaultGitSource(t *testing.T) {
	for name, tc := range map[string]struct {
		fault   func(t *testing.T, h *gitHost, r *repo)
		reason  string
		stalled bool
		words   []string
	}{
		"host down": {
			fault:  func(t *testing.T, h *gitHost, r *repo) { h.Close() },
			reason: v1.ReasonHostUnreachable,
			words:  []string{"unreachable", "connection refused"},
		},
		"auth revoked": {
			fault:   func(t *testing.T, h *gitHost, r *repo) { h.SetPassword("rotated") },
			reason:  v1.ReasonAuthenticationFailed,
			stalled: true,
			words:   []string{"rejected the username and password from Secret/", "/git-auth"},
		},
		"branch deleted": {
			fault: func(t *testing.T, h *gitHost, r *repo) {
				r.git("checkout", "-q", "-b", "other")
				r.git("branch", "-q", "-D", "main")
			},
			reason:  v1.ReasonRefNotFound,
			stalled: true,
			words:   []string{`branch "main" not found`, "the remote has branches other"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			f, h := startGitFaultCase(t)
			before := f.uids(t, "a", "b")
			good := &v1.GitSync{}
			if err := f.c.Get(context.Background(), f.key, good); err != nil {
				t.Fatal(err)
			}
			tc.fault(t, h, f.repo)
			request(t, f.c, f.key, "after-fault")
			gs := f.waitNotReady(t, tc.reason, tc.words...)
			assertStalled(t, gs, tc.stalled)
			if gs.Status.LastAppliedRevision != good.Status.LastAppliedRevision {
				t.Errorf("lastAppliedRevision moved from %q to %q on a failed fetch", good.Status.LastAppliedRevision, gs.Status.LastAppliedRevision)
			}
			if msg := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReady).Message; strings.Contains(msg, "s3cret") || strings.Contains(msg, "rotated") {
				t.Errorf("Ready message reveals a password: %q", msg)
			}
			f.assertSurvived(t, before)
			assertNoOrphans(t, f.ns)
			if !sameInventory(good, gs) {
				t.Errorf("inventory changed on a failed fetch: %+v -> %+v", good.Status.Inventory, gs.Status.Inventory)
			}
		})
	}
}

// assertStalled checks the kstatus shape of a failed GitSync: Stalled=True
// with Ready's reason and no Reconciling when stalled, else Reconciling=True
// and no Stalled.
func assertStalled(t *testing.T, gs *v1.GitSync, stalled bool) {
	t.Helper()
	ready := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReady)
	st := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionStalled)
	rec := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReconciling)
	if stalled {
		if st == nil || st.Status != metav1.ConditionTrue || st.Reason != ready.Reason || rec != nil {
			t.Errorf("want Stalled=True with reason %s and no Reconciling; conditions %+v", ready.Reason, gs.Status.Conditions)
		}
		return
	}
	if st != nil || rec == nil || rec.Status != metav1.ConditionTrue {
		t.Errorf("want Reconciling=True (a retry pending) and no Stalled; conditions %+v", gs.Status.Conditions)
	}
}

// TestFaultGitRefMovedBackwards: the branch is reset to an older commit
// (a force-push). Git is the source of truth, so the older commit is
// synced, with the rewind named in status or events; objects in both
// commits keep their UIDs and nothing is orphaned. (The Rewritten report
// is the rewind feature's own; this test reads it, no guard was removed.)
func TestFaultGitRefMovedBackwards(t *testing.T) {
	f, _ := startGitFaultCase(t)
	before := f.uids(t, "a", "b")
	commit2 := f.repo.commit(map[string]string{"deploy/a.yaml": configMap("a", "2")})
	request(t, f.c, f.key, "commit2")
	f.waitApplied(t, commit2)

	f.repo.git("reset", "-q", "--hard", f.first)
	request(t, f.c, f.key, "rewound")
	gs := waitCondition(t, f.c, f.key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, f.first)
	})
	if cm, err := getCM(t, f.c, f.ns, "a"); err != nil || cm.Data["value"] != "1" {
		t.Errorf("ConfigMap a after the rewind = %v, %v; want the older commit's value 1", cm.Data, err)
	}
	f.assertSurvived(t, before)
	assertNoOrphans(t, f.ns)
	if !rewindReported(t, f, gs) {
		t.Errorf("the rewind from %s to %s is named neither in status nor in an Event: %+v", commit2, f.first, gs.Status.Conditions)
	}
}

// rewindReported reports whether a condition or an Event of the GitSync
// says its branch moved backwards.
func rewindReported(t *testing.T, f *faultCase, gs *v1.GitSync) bool {
	t.Helper()
	says := func(s string) bool {
		s = strings.ToLower(s)
		return strings.Contains(s, "backward") || strings.Contains(s, "rewr") || strings.Contains(s, "rewound") || strings.Contains(s, "rewind")
	}
	for _, c := range gs.Status.Conditions {
		if says(c.Reason) || says(c.Message) {
			return true
		}
	}
	found := false
	eventually(t, "events listed", func(ctx context.Context) (bool, error) {
		evs := &corev1.EventList{}
		if err := f.c.List(ctx, evs); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Namespace == f.ns && e.InvolvedObject.Name == f.key.Name && (says(e.Reason) || says(e.Message)) {
				found = true
			}
		}
		return true, nil
	})
	return found
}

// startGitFaultCase is startFaultCase with the repository served over
// HTTP with basic auth (user git, password s3cret from a Secret).
func startGitFaultCase(t *testing.T) (*faultCase, *gitHost) {
	t.Helper()
	c := setup(t)
	r := newRepo(t)
	h := newGitHost(t, r, "s3cret")
	f := &faultCase{c: c, ns: env.Namespace(t), repo: r, proxy: env.NewFaultProxy(t)}
	f.agent = startAgent(t, agentOptions{namespace: f.ns, config: f.proxy.Config})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "git-auth", Namespace: f.ns},
		Data:       map[string][]byte{"username": []byte("git"), "password": []byte("s3cret")},
	}
	if err := c.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	f.first = r.commit(map[string]string{"deploy/a.yaml": configMap("a", "1"), "deploy/b.yaml": configMap("b", "1")})
	gs := newGitSync(f.ns, "app", h.url, func(g *v1.GitSync) {
		g.Spec.Source.SecretRef = &v1.LocalObjectReference{Name: "git-auth"}
		g.Spec.RetryInterval = &metav1.Duration{Duration: 1e9}
	})
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	f.key = client.ObjectKeyFromObject(gs)
	f.waitApplied(t, f.first)
	return f, h
}

func sameInventory(a, b *v1.GitSync) bool {
	return cmp.Equal(a.Status.Inventory, b.Status.Inventory)
}
