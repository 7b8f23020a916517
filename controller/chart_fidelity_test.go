package controller_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/testcharts"
	"gitsync.dev/gitsync/internal/testenv"
)

// TestChartsConverge: the agent applies each test chart (podinfo's block
// scalar that ends a template, Traefik's keys with nothing under them, a
// CRD and its custom resource), and once other managers write below those
// nulls (the controller-manager's revision annotation, a rollout restart's
// pod template annotation) the reconcile their change wakes takes no field
// back (the Deployment keeps the resourceVersion their write gave it), and
// a resync once the agent's cache holds every write sends nothing.
// podinfo's redis.conf keeps its final newline.
//
// Checked by removing the normalizeNulls call from source/render: the
// reconcile after traefik's annotations writes its Deployment again (it
// takes .metadata.annotations back from kube-controller-manager).
func TestChartsConverge(t *testing.T) {
	c := setup(t)
	for _, name := range testcharts.Names() {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			t.Cleanup(func() {
				crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "middlewares.traefik." + ns + ".test"}}
				_ = c.Delete(context.Background(), crd)
			})
			a := startAgent(t, agentOptions{namespace: ns})
			r := newRepo(t)
			r.commit(testcharts.Files(name, "deploy"))
			gs := newGitSync(ns, name, r.url())
			if err := c.Create(context.Background(), gs); err != nil {
				t.Fatal(err)
			}
			key := client.ObjectKeyFromObject(gs)
			waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
			a.settle(t, c, key, 1)

			// One write at a time, each waking one reconcile. What the
			// reconcile it wakes must not do is take a field back: the
			// Deployment keeps the resourceVersion the other manager's write
			// gave it. (Counting requests here is not the claim: a reconcile
			// that started from a cache one watch event behind may send a
			// no-op apply, apply/doc.go; that changes nothing and is counted
			// by the resync below, once the cache holds every write.)
			for _, w := range othersWrites(t, c, ns) {
				done := a.reconciles(t, "success")
				rv := w.do(t)
				eventually(t, "the reconcile "+w.name+" wakes", func(context.Context) (bool, error) {
					return a.reconciles(t, "success") > done, nil
				})
				if now := a.waitAgentSees(t, c, ns, w.deployment); now != rv {
					t.Errorf("after %s: gitsync wrote the Deployment (resourceVersion %s → %s)", w.name, rv, now)
				}
			}
			// The cache now holds every write: a resync decides from what
			// the apiserver has and sends nothing.
			done, mark := a.reconciles(t, "success"), len(a.count.all.Requests())
			poke(t, c, key, "resync")
			eventually(t, "resync reconcile", func(context.Context) (bool, error) { return a.reconciles(t, "success") > done, nil })
			if writes := objectWrites(a.count.all.Requests()[mark:]); len(writes) != 0 {
				t.Errorf("resync: %d writes, want 0: %v", len(writes), writes)
			}
			if name == testcharts.Podinfo {
				cm := &corev1.ConfigMap{}
				if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "podinfo-redis"}, cm); err != nil {
					t.Fatal(err)
				}
				if want := "maxmemory 64mb\nmaxmemory-policy allkeys-lru\nsave \"\"\nappendonly no\n"; cm.Data["redis.conf"] != want {
					t.Errorf("redis.conf = %q, want %q", cm.Data["redis.conf"], want)
				}
			}
		})
	}
}

// otherWrite is one change another manager makes to an object.
type otherWrite struct {
	name, deployment string
	// do writes and returns the resourceVersion the write gave the object.
	do func(t *testing.T) string
}

// othersWrites are, for every Deployment of ns, what the controller-manager
// does (none runs here), as its field manager: the revision annotation; and
// what `kubectl rollout restart` does: a pod template annotation.
func othersWrites(t *testing.T, c client.Client, ns string) []otherWrite {
	t.Helper()
	list := &appsv1.DeploymentList{}
	if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		t.Fatalf("no Deployment in %s to annotate", ns)
	}
	var out []otherWrite
	for i := range list.Items {
		d := &list.Items[i]
		for _, w := range []struct{ manager, patch string }{
			{"kube-controller-manager", `{"metadata":{"annotations":{"deployment.kubernetes.io/revision":"1"}}}`},
			{"kubectl-rollout", `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2025-03-01T12:00:00Z"}}}}}`},
		} {
			out = append(out, otherWrite{name: w.manager + " on " + d.Name, deployment: d.Name, do: func(t *testing.T) string {
				t.Helper()
				err := c.Patch(context.Background(), d, client.RawPatch(types.MergePatchType, []byte(w.patch)), client.FieldOwner(w.manager))
				if err != nil {
					t.Fatal(err)
				}
				return d.ResourceVersion
			}})
		}
	}
	return out
}

// objectWrites are the requests that changed the cluster: not reads, not
// dry runs, not access reviews (which store nothing).
func objectWrites(reqs []testenv.Request) []string {
	var out []string
	for _, r := range reqs {
		if r.Method == http.MethodGet || r.DryRun || strings.HasPrefix(r.Path, "/apis/authorization.k8s.io/") {
			continue
		}
		out = append(out, r.String())
	}
	return out
}
