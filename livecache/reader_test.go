package livecache_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/testenv"
	"gitsync.dev/gitsync/livecache"
)

// TestReaderWhileListing: while a kind's first listing is held, Start
// reports it listing (probing it once), and a Reader answers reads of it as
// the cache would (managed objects only), from one LIST of the namespace;
// once the listing ended, Start reports nothing listing and a Reader reads
// the cache. Checked by making Reader.Get always read the cache: the first
// Get then blocks until its context ends.
func TestReaderWhileListing(t *testing.T) {
	ns := env.Namespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for name, labels := range map[string]map[string]string{"a": {v1.LabelName: "app"}, "b": {v1.LabelName: "app"}, "unmanaged": nil} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Data: map[string]string{"k": name}}
		if err := env.Client.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	proxy := env.NewFaultProxy(t)
	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	proxy.MustInject(t, testenv.Fault{Method: http.MethodGet, Path: `^/api/v1/configmaps$`, Query: map[string]string{"sendInitialEvents": "true"}, Hold: release})
	probes := proxy.MustInject(t, testenv.Fault{Method: http.MethodGet, Path: `^/api/v1/configmaps$`, Query: map[string]string{"limit": "1"}})
	nsLists := proxy.MustInject(t, testenv.Fault{Method: http.MethodGet, Path: `^/api/v1/namespaces/` + ns + `/configmaps$`})
	opts := cache.Options{Scheme: env.Scheme, DefaultLabelSelector: livecache.ManagedSelector(), DefaultTransform: livecache.CompactLive}
	c, err := cache.New(proxy.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	direct, err := client.NewWithWatch(proxy.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	kinds := livecache.NewKinds(&watchCounter{}, &handler.TypedFuncs[*unstructured.Unstructured, reconcile.Request]{}, predicate.TypedFuncs[*unstructured.Unstructured]{})
	objs := []*unstructured.Unstructured{configMapObj(ns, "a")}
	for range 2 {
		listing, err := kinds.Start(ctx, c, direct, objs)
		if err != nil || !listing {
			t.Fatalf("Start while the listing is held = %v, %v; want listing", listing, err)
		}
	}
	if probes.Matched() != 1 {
		t.Errorf("kind probed %d times, want once", probes.Matched())
	}
	r := kinds.Reader(c, direct)
	gctx, gcancel := context.WithTimeout(ctx, time.Minute)
	defer gcancel()
	for name, want := range map[string]bool{"a": true, "b": true, "unmanaged": false, "missing": false} {
		u := configMapObj("", "")
		err := r.Get(gctx, client.ObjectKey{Namespace: ns, Name: name}, u)
		switch {
		case want && (err != nil || u.GetName() != name || u.Object["data"].(map[string]any)["k"] != name):
			t.Errorf("Get %s = %v, %v; want the live object", name, u.Object, err)
		case !want && !apierrors.IsNotFound(err):
			t.Errorf("Get %s = %v; want NotFound, as from the cache of managed objects", name, err)
		}
	}
	if nsLists.Matched() != 1 {
		t.Errorf("%d LISTs of the namespace, want 1 for all the reads", nsLists.Matched())
	}

	close(release)
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		listing, err := kinds.Start(ctx, c, direct, objs)
		return !listing, err
	})
	if err != nil {
		t.Fatalf("Start after the listing: %v", err)
	}
	u := configMapObj("", "")
	if err := kinds.Reader(c, direct).Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, u); err != nil || u.GetName() != "a" {
		t.Errorf("Get a after the listing = %v", err)
	}
	if nsLists.Matched() != 1 {
		t.Errorf("%d LISTs of the namespace, want none after the listing ended", nsLists.Matched()-1)
	}
}
