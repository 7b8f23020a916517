package bench

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/internal/testenv"
)

// The engine benchmark: raw parallel server-side apply with 16 workers (the
// floor: no reads, no diff, no staging) against the Applier, per case. Run it
// once:
//
//	go test ./bench -run '^$' -bench BenchmarkApply -benchtime 1x -timeout 30m
//
// Each case reports wall time (ns/op) and the API requests it made
// (requests/op, counted by a RoundTripper wrapped into the rest.Config).

const floorWorkers = 16

func BenchmarkApply(b *testing.B) {
	b.Run("create-1000-configmaps", func(b *testing.B) {
		b.Run("floor", func(b *testing.B) {
			benchFloor(b, func(ns string) []*unstructured.Unstructured { return configMaps(ns, 1000) })
		})
		b.Run("applier", func(b *testing.B) {
			benchApplier(b, apply.DefaultOptions(), true, func(ns string) []*unstructured.Unstructured { return configMaps(ns, 1000) })
		})
		b.Run("applier-cold", func(b *testing.B) {
			benchApplier(b, apply.DefaultOptions(), false, func(ns string) []*unstructured.Unstructured { return configMaps(ns, 1000) })
		})
	})
	b.Run("reapply-1000-unchanged", func(b *testing.B) {
		b.Run("floor", func(b *testing.B) { benchFloorReapply(b, 1000) })
		b.Run("applier", func(b *testing.B) { benchApplierReapply(b, 1000) })
	})
	b.Run("crd-2000-crs", func(b *testing.B) {
		b.Run("floor", func(b *testing.B) { benchFloor(b, crdSet(2000)) })
		b.Run("applier", func(b *testing.B) { benchApplier(b, apply.DefaultOptions(), true, crdSet(2000)) })
	})
	b.Run("mixed-1000", func(b *testing.B) {
		b.Run("floor", func(b *testing.B) { benchFloor(b, mixed) })
		b.Run("applier", func(b *testing.B) { benchApplier(b, apply.DefaultOptions(), true, mixed) })
	})
}

// BenchmarkApplyConcurrency creates 1,000 ConfigMaps at several Applier
// concurrencies; it chose apply.DefaultConcurrency.
func BenchmarkApplyConcurrency(b *testing.B) {
	for _, c := range []int{4, 8, 16, 32, 64} {
		b.Run(fmt.Sprint(c), func(b *testing.B) {
			opts := apply.DefaultOptions()
			opts.Concurrency = c
			benchApplier(b, opts, true, func(ns string) []*unstructured.Unstructured { return configMaps(ns, 1000) })
		})
	}
}

func report(b *testing.B, c *testenv.RequestCounter, objects int) {
	b.ReportMetric(float64(c.All.Load())/float64(b.N), "requests/op")
	b.ReportMetric(float64(objects*b.N)/b.Elapsed().Seconds(), "objects/s")
}

func namespace(b *testing.B) string {
	b.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	return ns.Name
}

// benchApplier times one Apply of a fresh set per iteration. With warm, the
// informers for the set's existing kinds are started and synced before the
// timer runs, as in a running agent; without, the timing includes their
// initial LIST of every object of those kinds in the cluster.
func benchApplier(b *testing.B, opts apply.Options, warm bool, set func(ns string) []*unstructured.Unstructured) {
	c := &testenv.RequestCounter{}
	cfg := c.Wrap(env.Config)
	objects := 0
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		objs := set(namespace(b))
		objects = len(objs)
		live, stop := startCache(b, cfg)
		if warm {
			warmInformers(b, live, objs)
		}
		a, err := apply.New(cfg, live, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cs, err := a.Apply(context.Background(), objs)
		b.StopTimer()
		stop()
		if err != nil || cs.Err() != nil {
			b.Fatalf("apply: %v %v", err, cs.Err())
		}
		if got := cs.Summary(); got != fmt.Sprintf("%d created", len(objs)) {
			b.Fatalf("summary %s", got)
		}
		b.StartTimer()
	}
	report(b, c, objects)
}

func benchApplierReapply(b *testing.B, n int) {
	c := &testenv.RequestCounter{}
	cfg := c.Wrap(env.Config)
	ns := namespace(b)
	objs := configMaps(ns, n)
	live, stop := startCache(b, cfg)
	defer stop()
	a, err := apply.New(cfg, live, apply.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := a.Apply(context.Background(), objs); err != nil {
		b.Fatal(err)
	}
	waitCached(b, live, ns, n)
	c.Reset()
	b.ResetTimer()
	for range b.N {
		cs, err := a.Apply(context.Background(), objs)
		if err != nil {
			b.Fatal(err)
		}
		if got := cs.Summary(); got != fmt.Sprintf("%d unchanged", n) {
			b.Fatalf("summary %s", got)
		}
	}
	report(b, c, n)
}

// warmInformers starts and syncs the cache's informers for the kinds in objs
// that the cluster already serves.
func warmInformers(b *testing.B, c cache.Cache, objs []*unstructured.Unstructured) {
	b.Helper()
	seen := map[schema.GroupVersionKind]bool{}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if seen[gvk] || gvk.Kind == "Widget" {
			continue
		}
		seen[gvk] = true
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if _, err := c.GetInformer(context.Background(), u, cache.BlockUntilSynced(true)); err != nil {
			b.Fatal(err)
		}
	}
}

// startCache starts an informer cache like the agent's and returns it with
// its stop function.
func startCache(b *testing.B, cfg *rest.Config) (cache.Cache, func()) {
	b.Helper()
	c, err := cache.New(cfg, cache.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = c.Start(ctx) }()
	c.WaitForCacheSync(ctx)
	return c, cancel
}

// waitCached waits until the cache holds the n ConfigMaps of ns at the
// apiserver's resourceVersions.
func waitCached(b *testing.B, c cache.Cache, ns string, n int) {
	b.Helper()
	want := &corev1.ConfigMapList{}
	if err := env.Client.List(context.Background(), want, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	rv := map[string]string{}
	for _, cm := range want.Items {
		rv[cm.Name] = cm.ResourceVersion
	}
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got := &unstructured.UnstructuredList{}
		got.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMapList"})
		if err := c.List(ctx, got, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		same := 0
		for _, o := range got.Items {
			if rv[o.GetName()] == o.GetResourceVersion() {
				same++
			}
		}
		return same >= n, nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// floor is raw parallel server-side apply: a dynamic client, 16 workers, no
// reads, no diff; CRDs are applied first and awaited until served.
type floor struct {
	dyn  dynamic.Interface
	disc discovery.DiscoveryInterface
}

func newFloor(b *testing.B, cfg *rest.Config) *floor {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return &floor{dyn: dyn, disc: disc}
}

func (f *floor) apply(ctx context.Context, objs []*unstructured.Unstructured) error {
	var crds, rest []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o)
		} else {
			rest = append(rest, o)
		}
	}
	if err := f.parallel(ctx, crds); err != nil {
		return err
	}
	for _, crd := range crds {
		if err := f.waitServed(ctx, crd); err != nil {
			return err
		}
	}
	return f.parallel(ctx, rest)
}

func (f *floor) parallel(ctx context.Context, objs []*unstructured.Unstructured) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(floorWorkers)
	for _, o := range objs {
		g.Go(func() error {
			gvk := o.GroupVersionKind()
			gvr := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: plural(gvk.Kind)}
			_, err := f.dyn.Resource(gvr).Namespace(o.GetNamespace()).Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "floor", Force: true})
			return err
		})
	}
	return g.Wait()
}

// waitServed polls discovery until the CRD's group version lists its kind:
// what any client must do before it can use a new kind.
func (f *floor) waitServed(ctx context.Context, crd *unstructured.Unstructured) error {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	return wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		list, err := f.disc.ServerResourcesForGroupVersion(group + "/v1")
		return err == nil && len(list.APIResources) > 0, nil
	})
}

func plural(kind string) string {
	return strings.ToLower(kind) + "s"
}

func benchFloor(b *testing.B, set func(ns string) []*unstructured.Unstructured) {
	c := &testenv.RequestCounter{}
	f := newFloor(b, c.Wrap(env.Config))
	objects := 0
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		objs := set(namespace(b))
		objects = len(objs)
		b.StartTimer()
		if err := f.apply(context.Background(), objs); err != nil {
			b.Fatal(err)
		}
	}
	report(b, c, objects)
}

func benchFloorReapply(b *testing.B, n int) {
	c := &testenv.RequestCounter{}
	f := newFloor(b, c.Wrap(env.Config))
	objs := configMaps(namespace(b), n)
	if err := f.apply(context.Background(), objs); err != nil {
		b.Fatal(err)
	}
	c.Reset()
	b.ResetTimer()
	for range b.N {
		if err := f.apply(context.Background(), objs); err != nil {
			b.Fatal(err)
		}
	}
	report(b, c, n)
}

func configMaps(ns string, n int) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, n)
	for i := range out {
		out[i] = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("cm-%04d", i), "namespace": ns, "labels": map[string]any{"app": "bench"}},
			"data":     map[string]any{"index": fmt.Sprint(i), "payload": strings.Repeat("x", 256)},
		}}
	}
	return out
}

// crdSet returns a set of one CRD (in a group unique to the namespace) and n
// custom resources of its kind.
func crdSet(n int) func(ns string) []*unstructured.Unstructured {
	return func(ns string) []*unstructured.Unstructured {
		group := ns + ".bench.gitsync.dev"
		out := []*unstructured.Unstructured{{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "widgets." + group},
			"spec": map[string]any{
				"group": group, "scope": "Namespaced",
				"names": map[string]any{"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
						"spec": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}},
			},
		}}}
		for i := range n {
			out = append(out, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": group + "/v1", "kind": "Widget",
				"metadata": map[string]any{"name": fmt.Sprintf("w-%04d", i), "namespace": ns},
				"spec":     map[string]any{"size": int64(i)},
			}})
		}
		return out
	}
}

// mixed returns 1,000 objects: 200 each of Deployments, Services, ConfigMaps,
// Secrets and ServiceAccounts.
func mixed(ns string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	meta := func(name string) map[string]any {
		return map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"app": name}}
	}
	for i := range 200 {
		name := fmt.Sprintf("app-%03d", i)
		out = append(out,
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(name),
				"spec": map[string]any{
					"replicas": int64(1),
					"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
					"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"app": name}},
						"spec": map[string]any{"serviceAccountName": name, "containers": []any{map[string]any{
							"name": "app", "image": "nginx:1.27", "ports": []any{map[string]any{"containerPort": int64(8080)}}}}},
					}}}},
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": meta(name),
				"spec": map[string]any{"clusterIP": "None", "selector": map[string]any{"app": name}, // headless: the test apiserver has a /24 service range
					"ports": []any{map[string]any{"port": int64(80), "targetPort": int64(8080)}}}}},
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(name),
				"data": map[string]any{"config.yaml": "replicas: 1\n"}}},
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": meta(name),
				"type": "Opaque", "data": map[string]any{"token": base64.StdEncoding.EncodeToString([]byte("secret-" + name))}}},
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(name)}},
		)
	}
	return out
}
