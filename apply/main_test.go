package apply_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
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

// counter counts the HTTP requests made through a rest.Config.
type counter struct {
	all, mutating, dryRun atomic.Int64
	mu                    sync.Mutex
	log                   []string // method and URL of every request since reset
}

func (c *counter) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			c.all.Add(1)
			switch {
			case r.URL.Query().Get("dryRun") != "" || dryRunBody(r):
				c.dryRun.Add(1)
			case r.Method != http.MethodGet && r.Method != http.MethodHead:
				c.mutating.Add(1)
			}
			c.mu.Lock()
			c.log = append(c.log, r.Method+" "+r.URL.String())
			c.mu.Unlock()
			return rt.RoundTrip(r)
		})
	}
	return cfg
}

// dryRunBody reports whether r carries its dryRun option in the body, as a
// DELETE does, restoring the body for the transport.
func dryRunBody(r *http.Request) bool {
	if r.Method != http.MethodDelete || r.Body == nil {
		return false
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	return err == nil && bytes.Contains(body, []byte(`"dryRun":["All"]`))
}

func (c *counter) reset() {
	c.all.Store(0)
	c.mutating.Store(0)
	c.dryRun.Store(0)
	c.mu.Lock()
	c.log = nil
	c.mu.Unlock()
}

func (c *counter) requests() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.log, "\n")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// fixture is an Applier reading from a started informer cache, with its
// requests counted.
type fixture struct {
	applier *apply.Applier
	cache   cache.Cache
	count   *counter
}

func newFixture(t *testing.T, opts apply.Options) *fixture {
	t.Helper()
	f := &fixture{count: &counter{}}
	cfg := f.count.wrap(env.Config)
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
