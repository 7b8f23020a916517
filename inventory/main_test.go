package inventory

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/internal/testenv"
	"gitsync.dev/gitsync/object"
)

var env *testenv.Env

// TestMain starts one control plane for the package. Workloads brings the
// controller-manager, whose namespace controller finishes Namespace
// deletions (and creates the "default" ServiceAccount and
// kube-root-ca.crt ConfigMap real Namespaces hold).
func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{Workloads: true}, &env))
}

const owner = "app"

// watchClient returns a direct, watching client, as Execute needs.
func watchClient(t *testing.T) client.WithWatch {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testOptions are the options of a sync named owner in ns whose new revision
// succeeded, without the share limit (tests that need it set it).
func testOptions(t *testing.T, ns string) PruneOptions {
	t.Helper()
	opts := DefaultPruneOptions()
	opts.Name, opts.Namespace = owner, ns
	opts.SyncSucceeded = true
	opts.MaxShare = 0
	opts.Timeout = 30 * time.Second
	opts.Discovery = discovery.NewDiscoveryClientForConfigOrDie(env.Config)
	return opts
}

// createCM creates a ConfigMap with labels and annotations and returns its
// inventory entry.
func createCM(t *testing.T, ns, name string, labels, annotations map[string]string, finalizers ...string) Entry {
	t.Helper()
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: name, Labels: labels, Annotations: annotations, Finalizers: finalizers,
	}}
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("create ConfigMap %s/%s: %v", ns, name, err)
	}
	return Entry{ID: cm(ns, name), UID: obj.UID, Version: "v1"}
}

// ours creates a ConfigMap in ns carrying the owner labels of the sync that
// lives in ns.
func ours(t *testing.T, ns, name string) Entry {
	t.Helper()
	return createCM(t, ns, name, object.OwnerLabels(owner, ns), nil)
}

// oursIn creates a ConfigMap in ns owned by the sync that lives in home.
func oursIn(t *testing.T, home, ns, name string) Entry {
	t.Helper()
	return createCM(t, ns, name, object.OwnerLabels(owner, home), nil)
}

// createNamespace creates a Namespace (with labels) that the test deletes
// at the end unless it is gone.
func createNamespace(t *testing.T, labels map[string]string) Entry {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "p-" + rand.String(8), Labels: labels}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create Namespace: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	return Entry{ID: object.ID{Kind: "Namespace", Name: ns.Name}, UID: ns.UID, Version: "v1"}
}

// exists reports whether the object of e is present (and not being deleted).
func exists(t *testing.T, e Entry) bool {
	t.Helper()
	m, err := newResolver(nil, env.Client).resolve(e)
	if err != nil {
		t.Fatal(err)
	}
	live, err := getMeta(context.Background(), env.Client, m.GVK, e.ID)
	if isGone(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return live.UID == e.UID && live.DeletionTimestamp == nil
}

// prune plans and executes; it fails the test if Plan fails.
func prune(t *testing.T, c client.WithWatch, old, desired *Inventory, opts PruneOptions) (*PruneResult, error) {
	t.Helper()
	plan, err := Plan(context.Background(), c, old, desired, opts)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return plan.Execute(context.Background(), c)
}

// actions maps subjects to actions, for cmp.Diff.
func actions(res *PruneResult) map[string]Action {
	out := map[string]Action{}
	for _, e := range res.Entries {
		out[e.ID.String()] = e.Action
	}
	return out
}

func reasons(res *PruneResult) map[string]string {
	out := map[string]string{}
	for _, e := range res.Entries {
		out[e.ID.String()] = e.Reason
	}
	return out
}

func metaOf(e Entry) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: e.ID.Namespace, Name: e.ID.Name}
}

func clientKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }
