package controller_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gittest"
)

// TestGitMistakesStallThenRecover: the first mistakes a user makes with a
// GitSync's source, against a real Git server on loopback behind basic
// auth, each leave the GitSync Stalled (Ready=False, Stalled=True, no
// Reconciling: `kubectl wait --for=condition=Ready` sees it has stopped)
// under its own reason with a message saying what to fix, with a Warning
// Event of that reason, and no Secret value in either. Once the user fixes
// the spec or the Secret, the GitSync becomes Ready without waiting out
// spec.interval (an hour here).
//
// Checked: with classifyFetch answering retry(FetchFailed) for every fetch
// failure, every case fails waiting for its reason.
func TestGitMistakesStallThenRecover(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	r := newRepo(t)
	names := []string{"no-credentials", "wrong-password", "keys-user-pass", "wrong-branch", "wrong-url"}
	files := map[string]string{}
	for _, n := range names {
		files[n+"/cm.yaml"] = configMap(n, "1") // one object per GitSync: one owner each
	}
	commit := r.commit(files)
	r.git("branch", "dev")
	h := newGitHost(t, r, "s3cret")
	startAgent(t, agentOptions{namespace: ns})
	good := map[string][]byte{"username": []byte("git"), "password": []byte("s3cret")}

	type gitMistake struct {
		name   string
		secret map[string][]byte // the Secret "<name>-auth", if any
		mutate func(*v1.GitSync)
		reason string
		words  []string
		// fix repairs the mistake the way a user would: a spec change or a
		// Secret update, and nothing else.
		fix func(t *testing.T, gs *v1.GitSync)
	}
	fixSecret := func(t *testing.T, gs *v1.GitSync) {
		t.Helper()
		s := &corev1.Secret{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: gs.Name + "-auth"}, s); err != nil {
			t.Fatal(err)
		}
		s.Data = good
		if err := c.Update(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		// No nudge: the Secret watch requeues the GitSyncs naming it.
	}
	fixSpec := func(mutate func(*v1.GitSync)) func(t *testing.T, gs *v1.GitSync) {
		return func(t *testing.T, gs *v1.GitSync) {
			t.Helper()
			patch := client.MergeFrom(gs.DeepCopy())
			mutate(gs)
			if err := c.Patch(context.Background(), gs, patch); err != nil {
				t.Fatal(err)
			}
		}
	}
	withSecret := func(g *v1.GitSync) { g.Spec.Source.SecretRef = &v1.LocalObjectReference{Name: g.Name + "-auth"} }
	cases := []gitMistake{{
		name:   "no-credentials",
		reason: v1.ReasonAuthenticationRequired,
		words:  []string{"none were sent", "set spec.source.secretRef"},
		fix: func(t *testing.T, gs *v1.GitSync) {
			createSecret(t, c, ns, gs.Name+"-auth", good)
			fixSpec(withSecret)(t, gs)
		},
	}, {
		name:   "wrong-password",
		secret: map[string][]byte{"username": []byte("git"), "password": []byte("hunter2")},
		mutate: withSecret,
		reason: v1.ReasonAuthenticationFailed,
		words:  []string{"rejected the username and password from Secret/" + ns + "/wrong-password-auth"},
		fix:    fixSecret,
	}, {
		name:   "keys-user-pass",
		secret: map[string][]byte{"user": []byte("git"), "pass": []byte("s3cret")},
		mutate: withSecret,
		reason: v1.ReasonCredentialsUnrecognized,
		words:  []string{"Secret/" + ns + "/keys-user-pass-auth has no username and password, or bearerToken", "its keys are pass, user"},
		fix:    fixSecret,
	}, {
		name:   "wrong-branch",
		secret: good,
		mutate: func(g *v1.GitSync) { withSecret(g); g.Spec.Source.Ref.Branch = "mian" },
		reason: v1.ReasonRefNotFound,
		words:  []string{`branch "mian" not found`, "the remote has branches dev, main (default main)"},
		fix:    fixSpec(func(g *v1.GitSync) { g.Spec.Source.Ref.Branch = "main" }),
	}, {
		name:   "wrong-url",
		secret: good,
		mutate: func(g *v1.GitSync) { withSecret(g); g.Spec.Source.URL = h.URL + "/nope" },
		reason: v1.ReasonRepositoryNotFound,
		words:  []string{"repository " + h.URL + "/nope: not found", "check spec.source.url"},
		fix:    fixSpec(func(g *v1.GitSync) { g.Spec.Source.URL = h.url }),
	}}
	if len(cases) != len(names) {
		t.Fatalf("%d cases for %d names", len(cases), len(names))
	}
	for _, tc := range cases {
		if tc.secret != nil {
			createSecret(t, c, ns, tc.name+"-auth", tc.secret)
		}
		mutate := []func(*v1.GitSync){}
		if tc.mutate != nil {
			mutate = append(mutate, tc.mutate)
		}
		mutate = append(mutate, func(g *v1.GitSync) { g.Spec.Source.Path = g.Name })
		if err := c.Create(context.Background(), newGitSync(ns, tc.name, h.url, mutate...)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := client.ObjectKey{Namespace: ns, Name: tc.name}
			gs := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionFalse, func(g *v1.GitSync) bool {
				ready := meta.FindStatusCondition(g.Status.Conditions, v1.ConditionReady)
				return ready.Reason == tc.reason && containsAll(ready.Message, tc.words)
			})
			assertStalled(t, gs, true)
			msg := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReady).Message
			if strings.Contains(msg, "s3cret") || strings.Contains(msg, "hunter2") {
				t.Errorf("Ready message reveals a password: %q", msg)
			}
			waitGitSyncEvent(t, c, key, corev1.EventTypeWarning, tc.reason)

			tc.fix(t, gs)
			waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
				return strings.Contains(g.Status.LastAppliedRevision, commit) &&
					meta.FindStatusCondition(g.Status.Conditions, v1.ConditionStalled) == nil
			})
		})
	}
}

func createSecret(t *testing.T, c client.Client, ns, name string, data map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
	if err := c.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func containsAll(s string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// waitGitSyncEvent waits for an Event of type and reason about the GitSync key;
// its message must not reveal a password.
func waitGitSyncEvent(t *testing.T, c client.Client, key client.ObjectKey, typ, reason string) {
	t.Helper()
	eventually(t, "a "+typ+" Event "+reason+" for "+key.String(), func(ctx context.Context) (bool, error) {
		evs := &corev1.EventList{}
		if err := c.List(ctx, evs, client.InNamespace(key.Namespace)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == key.Name && e.Type == typ && e.Reason == reason {
				if strings.Contains(e.Message, "s3cret") || strings.Contains(e.Message, "hunter2") {
					t.Errorf("Event message reveals a password: %q", e.Message)
				}
				return true, nil
			}
		}
		return false, nil
	})
}

// TestPinnedCommitPushedLater: a GitSync pinned to a commit the remote does
// not have yet is Stalled (RefNotFound), and once the commit is pushed the
// next sync applies it: a failure of the remote is not remembered as a
// broken revision.
//
// Checked: with render remembering every Stalled failure (the
// git.Reason test dropped), the GitSync stays Stalled after the push.
func TestPinnedCommitPushedLater(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	r := newRepo(t)
	r.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
	clone := gittest.OpenRepo(t, t.TempDir())
	clone.Git("clone", "-q", r.dir, ".")
	pinned := clone.Commit("change", map[string]string{"deploy/a.yaml": configMap("a", "2")})
	startAgent(t, agentOptions{namespace: ns})
	gs := newGitSync(ns, "pinned", r.url(), func(g *v1.GitSync) { g.Spec.Source.Ref = v1.GitRef{Commit: pinned} })
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionStalled, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return meta.FindStatusCondition(g.Status.Conditions, v1.ConditionStalled).Reason == v1.ReasonRefNotFound
	})

	clone.Push("origin", "HEAD:refs/heads/feature")
	request(t, c, key, "pushed")
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, pinned)
	})
}
