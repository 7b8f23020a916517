package apply_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{}, &env))
}

// fixture is an Applier reading from a started informer cache, with its
// requests counted.
type fixture struct {
	applier *apply.Applier
	cache   cache.Cache
	count   *testenv.RequestCounter
}

func newFixture(t *testing.T, opts apply.Options) *fixture {
	t.Helper()
	f := &fixture{count: &testenv.RequestCounter{}}
	cfg := f.count.Wrap(env.Config)
	c, err := cache.New(cfg, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	f.cache = c
	f.applier, err = apply.New(cfg, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) apply(t *testing.T, objs ...*unstructured.Unstructured) *apply.ChangeSet {
	t.Helper()
	cs, err := f.applier.Apply(context.Background(), objs)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return cs
}

// waitCached waits until the cache holds every object at the resourceVersion
// the apiserver has, so a following Apply decides from fresh state.
func (f *fixture) waitCached(t *testing.T, objs ...*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		want := getLive(t, o)
		err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(o.GroupVersionKind())
			if err := f.cache.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
				return false, nil
			}
			return got.GetResourceVersion() == want.GetResourceVersion(), nil
		})
		if err != nil {
			t.Fatalf("cache never caught up with %s/%s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// obj parses a YAML manifest, replacing NS with the namespace.
func obj(t testing.TB, ns, manifest string) *unstructured.Unstructured {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(strings.ReplaceAll(manifest, "NS", ns)))
	if err != nil {
		t.Fatalf("parse manifest: %v", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatalf("parse manifest: %v", err)
	}
	return u
}

// getLive reads an object straight from the apiserver.
func getLive(t *testing.T, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(o.GroupVersionKind())
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(o), live); err != nil {
		t.Fatalf("get %s/%s: %v", o.GetKind(), o.GetName(), err)
	}
	return live
}

// actions maps subjects to actions, for cmp.Diff.
func actions(cs *apply.ChangeSet) map[string]apply.Action {
	out := map[string]apply.Action{}
	for _, e := range cs.Entries {
		out[e.Subject] = e.Action
	}
	return out
}

func entry(t *testing.T, cs *apply.ChangeSet, subject string) apply.Entry {
	t.Helper()
	for _, e := range cs.Entries {
		if e.Subject == subject {
			return e
		}
	}
	t.Fatalf("no entry %s in %v", subject, actions(cs))
	return apply.Entry{}
}
