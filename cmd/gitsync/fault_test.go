package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/crashpoint"
	"gitsync.dev/gitsync/internal/orphans"
)

// startAgentProc starts the real binary for GitSyncs in ns with extra
// environment variables, without leader election, until the test ends.
func startAgentProc(t *testing.T, ns string, extraEnv ...string) *runProc {
	t.Helper()
	return startAgentProcOn(t, env.Kubeconfig, ns, extraEnv...)
}

// startAgentProcOn is startAgentProc against the cluster of kubeconfig.
func startAgentProcOn(t *testing.T, kubeconfig, ns string, extraEnv ...string) *runProc {
	t.Helper()
	return launchAgentOn(t, kubeconfig, ns, true, extraEnv...)
}

// startAgentProcHeld is startAgentProcOn for an agent the test holds
// before it listens: it returns at once (launchAgent's wait false).
func startAgentProcHeld(t *testing.T, kubeconfig, ns string) *runProc {
	t.Helper()
	return launchAgentOn(t, kubeconfig, ns, false)
}

func launchAgentOn(t *testing.T, kubeconfig, ns string, wait bool, extraEnv ...string) *runProc {
	t.Helper()
	return launchAgent(t, func(metrics, health, webhook string) []string {
		return []string{"run", "--kubeconfig", kubeconfig, "--install-crds", "--watch-namespace", ns, "--leader-elect=false",
			"--metrics-addr", metrics, "--health-addr", health, "--webhook-addr", webhook,
			"--cache-dir", t.TempDir(), "--log-format", "json", "--allow-local-sources"}
	}, append(append(os.Environ(), "KUBECONFIG=/nonexistent"), extraEnv...), wait)
}

// waitCrash waits until the process killed itself at point: the marker
// names the point and the process died of SIGKILL.
func (p *runProc) waitCrash(t *testing.T, marker, point string) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("gitsync run never reached crash point %s\nlog:\n%s", point, p.log.String())
	}
	b, _ := os.ReadFile(marker)
	var ee *exec.ExitError
	if strings.TrimSpace(string(b)) != point || !errors.As(p.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("gitsync run ended (%v) with marker %q, want a SIGKILL at %s\nlog:\n%s", p.err, b, point, p.log.String())
	}
}

// TestFaultAgentKilled kills the real agent (SIGKILL, no cleanup) at each
// stage of a sync and of a deletion, then starts it again. Whatever the
// stage, the restarted agent converges: objects that left Git are pruned,
// objects in Git keep their UID, and no object with owner labels is left
// outside every inventory.
//
// Each subtest first proves the kill happened at its point (marker file,
// SIGKILL exit). Checked: with engine.Run's pending record disabled,
// "after-apply" fails: c is never pruned.
func TestFaultAgentKilled(t *testing.T) {
	type step struct {
		// change is committed before the crashing agent starts; then,
		// after the kill, cleanup is committed (nil: nothing).
		change, cleanup map[string]string
		// gone must not exist at the end; kept must keep their UIDs.
		gone, kept []string
		// deleteGitSync deletes the GitSync instead of committing change.
		deleteGitSync bool
	}
	for point, tc := range map[string]step{
		crashpoint.AfterApply: {
			change: map[string]string{"deploy/c.yaml": configMap("c", "value", "1")}, cleanup: map[string]string{"deploy/c.yaml": ""},
			gone: []string{"c"}, kept: []string{"a", "b"},
		},
		crashpoint.AfterPrune: {
			change: map[string]string{"deploy/b.yaml": ""},
			gone:   []string{"b"}, kept: []string{"a"},
		},
		crashpoint.BeforeStatus: {
			change: map[string]string{"deploy/c.yaml": configMap("c", "value", "1")}, cleanup: map[string]string{"deploy/c.yaml": ""},
			gone: []string{"c"}, kept: []string{"a", "b"},
		},
		crashpoint.InFinalizer: {deleteGitSync: true, gone: []string{"a", "b"}},
	} {
		t.Run(point, func(t *testing.T) {
			ns := env.Namespace(t)
			c := gitsyncClient(t)
			ctx := context.Background()
			dir := newRunRepo(t)
			commit := commitFiles(t, dir, map[string]string{
				"deploy/a.yaml": configMap("a", "value", "1"), "deploy/b.yaml": configMap("b", "value", "1"),
			})
			first := startAgentProc(t, ns)
			gs := &gitsyncv1.GitSync{
				ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
				Spec: gitsyncv1.GitSyncSpec{
					Source:        gitsyncv1.GitSource{URL: "file://" + dir, Ref: gitsyncv1.GitRef{Branch: "main"}, Path: "deploy"},
					Interval:      metav1.Duration{Duration: time.Hour},
					RetryInterval: &metav1.Duration{Duration: time.Second},
					Prune:         true,
				},
			}
			poll(t, "create GitSync", func(ctx context.Context) (bool, error) { return c.Create(ctx, gs.DeepCopy()) == nil, nil })
			key := client.ObjectKeyFromObject(gs)
			waitApplied(t, c, key, commit)
			before := uidsOf(t, c, ns, "a", "b")
			first.stop(t)

			if tc.change != nil {
				commit = commitFiles(t, dir, tc.change)
			}
			marker := filepath.Join(t.TempDir(), "crashed")
			crashing := startAgentProc(t, ns, crashpoint.EnvVar+"="+point, crashpoint.MarkerEnvVar+"="+marker)
			if tc.deleteGitSync {
				if err := c.Delete(ctx, gs.DeepCopy()); err != nil {
					t.Fatal(err)
				}
			}
			crashing.waitCrash(t, marker, point)
			if tc.cleanup != nil {
				commit = commitFiles(t, dir, tc.cleanup)
			}

			startAgentProc(t, ns)
			if tc.deleteGitSync {
				poll(t, "GitSync deleted after the restart", func(ctx context.Context) (bool, error) {
					return apierrors.IsNotFound(c.Get(ctx, key, &gitsyncv1.GitSync{})), nil
				})
			} else {
				patch := client.MergeFrom(gs.DeepCopy())
				gs.Annotations = map[string]string{"gitsync.dev/requested-at": "after-crash"}
				if err := c.Patch(ctx, gs, patch); err != nil {
					t.Fatal(err)
				}
				waitApplied(t, c, key, commit)
			}
			for _, n := range tc.gone {
				poll(t, "ConfigMap "+n+" gone", func(ctx context.Context) (bool, error) {
					return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &corev1.ConfigMap{})), nil
				})
			}
			for _, n := range tc.kept {
				cm := &corev1.ConfigMap{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, cm); err != nil || cm.UID != before[n] {
					t.Errorf("ConfigMap %s still in Git: uid %s, err %v; want it kept with uid %s", n, cm.UID, err, before[n])
				}
			}
			assertNoOrphans(t, ns)
		})
	}
}

func uidsOf(t *testing.T, c client.Client, ns string, names ...string) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for _, n := range names {
		cm := &corev1.ConfigMap{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: n}, cm); err != nil {
			t.Fatal(err)
		}
		out[n] = cm.UID
	}
	return out
}

// assertNoOrphans fails the test when an object carrying the owner labels
// of a GitSync in ns is recorded in no inventory (see orphans.Find).
func assertNoOrphans(t *testing.T, ns string) {
	t.Helper()
	found, err := orphans.Find(context.Background(), env.Config, ns)
	if err != nil {
		t.Fatalf("look for orphans: %v", err)
	}
	for _, o := range found {
		t.Errorf("orphan: %s", o)
	}
}
