package orphans_test

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/orphans"
	"gitsync.dev/gitsync/internal/testenv"
	"gitsync.dev/gitsync/object"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{}, &env)) }

// TestFindReportsAnUnrecordedObject: the helper every fault test ends with
// can fail: a labelled object outside every inventory is reported, and is
// no longer once a GitSync's status records it.
func TestFindReportsAnUnrecordedObject(t *testing.T) {
	ctx := context.Background()
	crd, err := v1.CRD()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, crd); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1.AddToScheme(scheme)
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return c.List(ctx, &v1.GitSyncList{}) == nil, nil
	})
	if err != nil {
		t.Fatalf("GitSync CRD not served: %v", err)
	}
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{}
	cm.Name, cm.Namespace, cm.Labels = "stray", ns, object.OwnerLabels("app", ns)
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	found, err := orphans.Find(ctx, env.Config, ns)
	if err != nil || len(found) != 1 {
		t.Fatalf("Find = %v, %v; want the stray ConfigMap", found, err)
	}

	gs := &v1.GitSync{}
	gs.Name, gs.Namespace = "app", ns
	gs.Spec.Source.URL, gs.Spec.Source.Ref.Branch = "https://example.com/app.git", "main"
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	id := object.ID{Kind: "ConfigMap", Namespace: ns, Name: "stray"}
	gs.Status.Inventory = &v1.Inventory{Entries: []v1.InventoryEntry{{ID: id.Key(), Version: "v1", UID: cm.UID}}}
	if err := c.Status().Update(ctx, gs); err != nil {
		t.Fatal(err)
	}
	if found, err := orphans.Find(ctx, env.Config, ns); err != nil || len(found) != 0 {
		t.Fatalf("Find = %v, %v; want none once recorded", found, err)
	}
}
