package controller_test

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gitsync.dev/gitsync/tracing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	gitsyncagent "gitsync.dev/gitsync/agent"
	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/controller"
	"gitsync.dev/gitsync/health/rules"
	"gitsync.dev/gitsync/internal/egress"
	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/internal/testenv"
	"gitsync.dev/gitsync/metrics"
)

var (
	env    *testenv.Env
	scheme = runtime.NewScheme()
	k8s    client.Client
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	os.Exit(testenv.Main(m, testenv.Options{}, &env))
}

func init() {
	_ = clientgoscheme.AddToScheme(scheme)
	_ = apiextensionsv1.AddToScheme(scheme)
	_ = v1.AddToScheme(scheme)
}

// setup installs the CRD once and returns a direct client knowing GitSync.
func setup(t *testing.T) client.Client {
	t.Helper()
	if k8s != nil {
		return k8s
	}
	ctx := context.Background()
	crd, err := v1.CRD()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create CRD: %v", err)
	}
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
	k8s = c
	return c
}

// counter is testenv.RequestCounter under the names this package's tests
// use: reads (GETs) and writes leave watches out, and requests lists the
// other requests as "METHOD path".
type counter struct {
	all           testenv.RequestCounter
	reads, writes *atomic.Int64
}

func newCounter() *counter {
	c := &counter{}
	c.reads, c.writes = &c.all.Reads, &c.all.Writes
	return c
}

func (c *counter) wrap(rt http.RoundTripper) http.RoundTripper { return c.all.WrapTransport(rt) }

func (c *counter) requests() []string {
	var out []string
	for _, r := range c.all.Requests() {
		if !r.Watch {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return out
}

// agent is a running agent (gitsync run's, through agent.New).
type agent struct {
	count   *counter
	metrics *prometheus.Registry
	rec     *controller.GitSyncReconciler
	cache   cache.Cache
	// stop stops the manager and waits for it (also done when the test ends).
	stop func()
}

type agentOptions struct {
	namespace string
	shard     string
	// logger, when set, receives the manager's and the reconciler's log.
	logger logr.Logger
	// config reaches the apiserver (a fault proxy's); nil means env.Config.
	config *rest.Config
	// strictEgress leaves the controller's safe defaults: no local sources,
	// no loopback. Other agents opt in, because the test repositories are
	// file:// URLs and the test apiserver is on loopback.
	strictEgress bool
	// allowLocalSources and allowNetworks, with strictEgress, are the
	// operator's --allow-local-sources and --allow-networks.
	allowLocalSources bool
	allowNetworks     []netip.Prefix
	// dial and resolver, when set, replace the egress dialer's network (a
	// recorder) and name lookups (a table).
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	resolver egress.Resolver
	// concurrent is --concurrent (Options.MaxConcurrentReconciles); 0 keeps
	// the default.
	concurrent int
	// limits, when set, replaces Options.Limits (retries, Git hosts).
	limits *controller.Limits
	// defaultServiceAccount is the operator's --default-service-account.
	defaultServiceAccount string
	// alsoNamespaces are more namespaces the agent serves beside namespace.
	alsoNamespaces []string
	// render, when set, is the revision cache's renderer (a sandbox);
	// nil renders in-process.
	render gitsyncagent.Renderer
	// fairShare keeps the agent's per-namespace share of the workers
	// (Options.NamespaceShare's default); other tests run without it.
	fairShare bool
	// commitStatusTimeout, when set, bounds one commit status post.
	commitStatusTimeout time.Duration
	// webhook, when set, is where the agent's webhook receiver serves;
	// enqueued is told every key it enqueues.
	webhook  net.Listener
	enqueued func(key string, at time.Time)
	// webhookLookup, when set, replaces how webhook Secret GETs are reused.
	webhookLookup *controller.WebhookLookupOptions
	// healthRules are the operator's --health-rules.
	healthRules []rules.Rule
	// tracing is the operator's --otlp-endpoint (and a test's batch timeout).
	tracing tracing.Options
}

// startAgent starts the agent `gitsync run` starts (agent.New), for the
// GitSyncs in one namespace, until the test ends. It differs from the
// shipped defaults only where a test must: its own metrics registry and
// request counter, no listeners, a short finalizer timeout, and (unless
// strictEgress) local sources and loopback allowed.
func startAgent(t *testing.T, o agentOptions) *agent {
	t.Helper()
	setup(t)
	a := &agent{count: newCounter(), metrics: prometheus.NewRegistry()}
	cfg := rest.CopyConfig(env.Config)
	if o.config != nil {
		cfg = rest.CopyConfig(o.config)
	}
	cfg.WrapTransport = a.count.wrap
	opts := gitsyncagent.DefaultOptions()
	opts.Namespace, opts.Shard, opts.AlsoNamespaces = o.namespace, o.shard, o.alsoNamespaces
	opts.Renderer = o.render // nil: in the agent's process
	opts.Logger = o.logger   // zero: the global logger TestMain set
	opts.CacheDir = t.TempDir()
	opts.Registry = a.metrics
	opts.WebhookListener = o.webhook
	opts.Webhook.EnqueueAt = o.enqueued
	if o.webhookLookup != nil {
		opts.WebhookLookup = *o.webhookLookup
	}
	opts.SkipNameValidation = true // one agent per test, in one process
	opts.SetMemoryLimit = false    // the test binary's, not an agent's
	opts.Tracing = o.tracing
	r := &opts.Reconciler
	r.FinalizeTimeout = time.Minute
	r.Egress.Policy.Allow, r.Egress.Dial, r.Egress.Resolver = o.allowNetworks, o.dial, o.resolver
	r.AllowLocalSources = o.allowLocalSources
	if o.concurrent > 0 {
		r.MaxConcurrentReconciles = o.concurrent
	}
	if o.limits != nil {
		r.Limits = *o.limits
	}
	if !o.fairShare {
		r.NamespaceShare = -1
	}
	r.CommitStatusTimeout = o.commitStatusTimeout
	r.DefaultServiceAccount = o.defaultServiceAccount
	r.HealthRules = o.healthRules
	if !o.strictEgress {
		r.AllowLocalSources = true
		r.Egress.Policy.Allow = append(r.Egress.Policy.Allow, netip.MustParsePrefix("127.0.0.0/8"))
	}
	ag, err := gitsyncagent.New(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	a.rec, a.cache = ag.Reconciler(), ag.Manager().GetCache()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ag.Start(ctx) }()
	var once sync.Once
	a.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("agent: %v", err)
			}
		})
	}
	t.Cleanup(a.stop)
	return a
}

func ptrTo[T any](v T) *T { return &v }

// reconciles returns how many reconciles ended with result.
func (a *agent) reconciles(t *testing.T, result metrics.Result) uint64 {
	t.Helper()
	return a.samples(t, "gitsync_reconcile_duration_seconds", string(result))
}

// samples returns the sample count of histogram name's series labelled
// result.
func (a *agent) samples(t *testing.T, name, result string) uint64 {
	t.Helper()
	mfs, err := a.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}

// applied returns the gitsync_applied_objects_total count for action and kind.
func (a *agent) applied(t *testing.T, action, kind string) float64 {
	t.Helper()
	mfs, err := a.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "gitsync_applied_objects_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if got["action"] == action && got["kind"] == kind {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// repo is a real Git repository in a temp dir, reached by file:// URL:
// internal/gittest's driver under the short names this package's tests use.
type repo struct {
	*gittest.Repo
	t   *testing.T
	dir string
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	r := gittest.NewRepo(t, t.TempDir())
	return &repo{Repo: r, t: t, dir: r.Dir}
}

func (r *repo) url() string { return r.URL() }

func (r *repo) git(args ...string) string { r.t.Helper(); return r.Git(args...) }

// commit writes files (content "" deletes the file) and returns the commit.
func (r *repo) commit(files map[string]string) string {
	r.t.Helper()
	return r.Commit("change", files)
}

// eventually polls cond until it holds or a generous timeout passes.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, cond)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
