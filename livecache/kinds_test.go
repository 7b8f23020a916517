package livecache_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"gitsync.dev/gitsync/livecache"
)

// watchCounter counts the watches registered with it.
type watchCounter struct{ n int }

func (w *watchCounter) Watch(source.Source) error { w.n++; return nil }

func configMapObj(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// TestKindsPrepare: a kind the agent may list and watch gets a synced
// informer, and its watch is registered once however many objects and
// calls name it; a kind the probe's identity may not list is a
// *ForbiddenError naming the kind and the apiserver's refusal, and no
// informer is left running for it.
//
// Checked by skipping the probe: the cache lists Secrets as the admin it
// was built with, and Prepare returns no error.
func TestKindsPrepare(t *testing.T) {
	ns := env.Namespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The agent's cache without its GitSync entry (the CRD is not
	// installed here).
	opts := cache.Options{Scheme: env.Scheme, DefaultLabelSelector: livecache.ManagedSelector(), DefaultTransform: livecache.CompactLive}
	c, err := cache.New(env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	admin, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w := &watchCounter{}
	kinds := livecache.NewKinds(w, &handler.TypedFuncs[*unstructured.Unstructured, reconcile.Request]{}, predicate.TypedFuncs[*unstructured.Unstructured]{})
	objs := []*unstructured.Unstructured{configMapObj(ns, "a"), configMapObj(ns, "b")}
	if err := kinds.Prepare(ctx, c, admin, objs); err != nil {
		t.Fatalf("Prepare as admin: %v", err)
	}
	if err := c.List(ctx, &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMapList"}}); err != nil {
		t.Errorf("ConfigMaps not readable from the cache after Prepare: %v", err)
	}
	for range 2 {
		if err := kinds.Watch(ctx, c, objs); err != nil {
			t.Fatal(err)
		}
	}
	if w.n != 1 {
		t.Errorf("%d watches registered for one kind, want 1", w.n)
	}

	nobody := rest.CopyConfig(env.Config)
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "nobody"}
	probe, err := client.NewWithWatch(nobody, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	secret := &unstructured.Unstructured{}
	secret.SetAPIVersion("v1")
	secret.SetKind("Secret")
	secret.SetNamespace(ns)
	secret.SetName("s")
	err = kinds.Prepare(ctx, c, probe, []*unstructured.Unstructured{secret})
	var fe *livecache.ForbiddenError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "the agent cannot read Secret into its watch cache") ||
		!strings.Contains(err.Error(), `"nobody"`) {
		t.Fatalf("Prepare with a refused probe = %v, want a ForbiddenError naming Secret and the user", err)
	}
}
