package controller_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/object"
)

// TestCacheHoldsOnlyManagedObjects: the agent's informers hold only objects
// with the owner label. An unlabelled ConfigMap it does not manage stays out
// of its cache; an unlabelled one Git names is adopted and counted as
// configured, not created; a managed object whose owner label someone
// removes leaves the cache, which the drift watch sees, and is re-applied
// with its labels (same object, same UID).
func TestCacheHoldsOnlyManagedObjects(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()

	for _, name := range []string{"bystander", "adopted"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"value": "1"}}
		if err := c.Create(ctx, cm, client.FieldOwner("kubectl-create")); err != nil {
			t.Fatal(err)
		}
	}
	r := newRepo(t)
	r.commit(map[string]string{"deploy/a.yaml": configMap("adopted", "1"), "deploy/b.yaml": configMap("new", "1")})
	gs := newGitSync(ns, "app", r.url())
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, client.ObjectKeyFromObject(gs), v1.ConditionReady, metav1.ConditionTrue, nil)

	// The ConfigMap informer runs (the agent applied ConfigMaps); it must
	// not hold what the agent does not manage.
	eventually(t, "managed ConfigMap cached", func(ctx context.Context) (bool, error) {
		return a.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: "new"}, &corev1.ConfigMap{}) == nil, nil
	})
	if err := a.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bystander"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("unmanaged ConfigMap in the agent's cache (err %v), want NotFound", err)
	}
	if got, want := a.applied(t, "configured", "ConfigMap"), 1.0; got != want {
		t.Errorf("configured ConfigMaps = %v, want %v (the adopted one)", got, want)
	}
	if got, want := a.applied(t, "created", "ConfigMap"), 1.0; got != want {
		t.Errorf("created ConfigMaps = %v, want %v", got, want)
	}
	adopted, err := getCM(t, c, ns, "adopted")
	if err != nil || !object.OwnedBy(adopted.Labels, "app", ns) {
		t.Fatalf("adopted ConfigMap labels = %v (%v), want owner labels", adopted.Labels, err)
	}

	before, err := getCM(t, c, ns, "new")
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"labels":{"` + v1.LabelName + `":null}}}`)
	if err := c.Patch(ctx, before.DeepCopy(), client.RawPatch(types.MergePatchType, patch), client.FieldOwner("kubectl-label")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "owner label restored", func(context.Context) (bool, error) {
		cm, err := getCM(t, c, ns, "new")
		return err == nil && object.OwnedBy(cm.Labels, "app", ns), err
	})
	after, err := getCM(t, c, ns, "new")
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != before.UID {
		t.Errorf("ConfigMap recreated (UID %s -> %s), want the same object relabelled", before.UID, after.UID)
	}
}
