package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"gitsync.dev/gitsync/tracing"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/controller"
	"gitsync.dev/gitsync/livecache"
	"gitsync.dev/gitsync/metrics"
	"gitsync.dev/gitsync/source"
	"gitsync.dev/gitsync/source/chartrepo"
	sourcegit "gitsync.dev/gitsync/source/git"
	sourcerender "gitsync.dev/gitsync/source/render"
)

// Agent is the gitsync agent: a controller-runtime manager holding the
// GitSync reconciler, its caches and indexes, and what runs beside it (the
// webhook receiver and forwarder, the replicas' sharing, the listeners).
type Agent struct {
	mgr manager.Manager
	rec *controller.GitSyncReconciler
}

// New builds the agent for the cluster cfg reaches (cfg is copied, then
// counted in gitsync_api_requests_total) and registers everything it runs
// with one manager; Start runs it. With InstallCRDs it first applies the
// GitSync CRD and waits for it within ctx, which also bounds the agent's
// identity lookup.
func New(ctx context.Context, cfg *rest.Config, opts Options) (*Agent, error) {
	if opts.ShareReplicas && opts.LeaderElection {
		return nil, errors.New("agent options invalid: ShareReplicas and LeaderElection exclude each other")
	}
	log := opts.Logger
	if log.GetSink() == nil {
		log = ctrl.Log
	}
	if opts.SetMemoryLimit {
		setMemoryLimit(log, opts.RenderMemory) // room for the render children
	}
	cfg = rest.CopyConfig(cfg)
	if err := metrics.CountAPIRequests(cfg, opts.registry()); err != nil {
		return nil, err
	}
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	if opts.InstallCRDs {
		if err := InstallCRD(ctx, cfg, scheme); err != nil {
			return nil, err
		}
	}
	if err := waitServed(ctx, cfg); err != nil {
		return nil, err
	}
	mgr, err := newManager(cfg, scheme, opts)
	if err != nil {
		return nil, err
	}
	if err := addTracing(ctx, mgr, &opts); err != nil {
		return nil, err
	}
	rec, m, err := newReconciler(ctx, mgr, opts)
	if err != nil {
		return nil, err
	}
	a := &Agent{mgr: mgr, rec: rec}
	if err := a.addShares(opts, log); err != nil {
		return nil, err
	}
	if err := indexByURL(ctx, mgr); err != nil {
		return nil, err
	}
	if err := a.addWebhook(opts, m); err != nil {
		return nil, err
	}
	return a, nil
}

// Start runs the agent until ctx ends or leadership is lost.
func (a *Agent) Start(ctx context.Context) error { return a.mgr.Start(ctx) }

// Manager is the agent's manager: its cache and clients.
func (a *Agent) Manager() manager.Manager { return a.mgr }

// Reconciler is the agent's GitSync reconciler.
func (a *Agent) Reconciler() *controller.GitSyncReconciler { return a.rec }

func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	return s, errors.Join(clientgoscheme.AddToScheme(s), apiextensionsv1.AddToScheme(s), gitsyncv1.AddToScheme(s))
}

func newManager(cfg *rest.Config, scheme *runtime.Scheme, opts Options) (manager.Manager, error) {
	byObject := cache.ByObject{}
	if opts.Namespace != "" {
		byObject.Namespaces = map[string]cache.Config{opts.Namespace: {}}
		for _, ns := range opts.AlsoNamespaces {
			byObject.Namespaces[ns] = cache.Config{}
		}
	}
	sel, err := shardSelector(opts.Shard)
	if err != nil {
		return nil, err
	}
	if sel != nil {
		byObject.Label = sel
	}
	mopts := ctrl.Options{
		Scheme:                        scheme,
		Cache:                         livecache.Options(byObject),
		Metrics:                       metricsserver.Options{BindAddress: bindOrOff(opts.MetricsAddr)},
		HealthProbeBindAddress:        opts.HealthAddr,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              LeaderElectionID(sel),
		LeaderElectionNamespace:       leaderElectionNamespace(opts),
		LeaderElectionReleaseOnCancel: true,
		Logger:                        opts.Logger,
	}
	if opts.SkipNameValidation {
		skip := true
		mopts.Controller = config.Controller{SkipNameValidation: &skip}
	}
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	if !listenerOff(opts.HealthAddr) {
		err = errors.Join(
			mgr.AddHealthzCheck("ping", healthz.Ping),
			mgr.AddReadyzCheck("cache", func(req *http.Request) error {
				ctx, cancel := context.WithTimeout(req.Context(), time.Second)
				defer cancel()
				if !mgr.GetCache().WaitForCacheSync(ctx) {
					return errors.New("informer caches not synced")
				}
				return nil
			}))
	}
	return mgr, err
}

// leaderElectionNamespace is where the leader Lease lives: as asked, else
// (outside a cluster, where controller-runtime cannot read the pod's) the
// watched namespace or default.
func leaderElectionNamespace(opts Options) string {
	if ns := opts.LeaderElectionNamespace; ns != "" || InCluster() {
		return ns
	}
	return firstNonEmpty(opts.Namespace, "default")
}

// newReconciler builds the fetcher, the revision cache and the metrics the
// reconciler is given, and the reconciler.
func newReconciler(ctx context.Context, mgr manager.Manager, opts Options) (*controller.GitSyncReconciler, *metrics.Metrics, error) {
	fopts := opts.Fetch
	fopts.Dir = cacheDir(opts.CacheDir)
	fetcher, err := sourcegit.NewFetcher(fopts)
	if err != nil {
		return nil, nil, err
	}
	ropts := opts.Reconciler
	copts := source.DefaultCacheOptions()
	copts.Fetcher = fetcher
	render := sourcerender.DefaultOptions()
	if ropts.MaxObjects > 0 {
		render.MaxObjects = ropts.MaxObjects // the operator's cap; GitSyncs compare theirs to the count
	}
	renderer := opts.Renderer
	if renderer == nil {
		renderer = inProcess{}
	}
	copts.Render = func(ctx context.Context, root, path string, s sourcerender.Settings) (*sourcerender.Rendered, error) {
		o := render
		o.Settings = s // the GitSync's spec.helm and spec.ignore
		return renderer.Render(ctx, root, path, o)
	}
	if tr, ok := renderer.(TreeRenderer); ok {
		copts.RenderTree = func(ctx context.Context, fsys fs.FS, path string, s sourcerender.Settings) (*sourcerender.Rendered, error) {
			o := render
			o.Settings = s
			return tr.RenderFS(ctx, fsys, path, o)
		}
	}
	charts, err := chartrepo.New(chartrepo.Options{
		Dir:           filepath.Join(fopts.Dir, "charts"),
		Egress:        &ropts.Egress,
		MaxChartBytes: render.MaxFileBytes, // a larger archive could not be rendered
	})
	if err != nil {
		return nil, nil, err
	}
	copts.Dependencies = source.ChartDependencies{Fetcher: charts, Render: render}
	copts.PullDir = filepath.Join(fopts.Dir, "artifacts")
	if err := os.MkdirAll(copts.PullDir, 0o700); err != nil {
		return nil, nil, err
	}
	srcCache, err := source.NewCache(copts)
	if err != nil {
		return nil, nil, err
	}
	m, err := metrics.New(opts.registry())
	if err != nil {
		return nil, nil, err
	}
	ropts.Fetcher, ropts.Cache, ropts.Metrics, ropts.Charts = fetcher, srcCache, m, charts
	ropts.AgentNamespace, ropts.AgentServiceAccount = identity(ctx, mgr.GetConfig(), ropts.AgentNamespace, ropts.AgentServiceAccount)
	rec, err := controller.New(mgr, ropts)
	return rec, m, err
}

// addTracing makes the tracer provider opts.Tracing asks for the
// reconciler's, and has the manager send what it holds when the agent stops.
func addTracing(ctx context.Context, mgr manager.Manager, opts *Options) error {
	if opts.Tracing.Endpoint == "" {
		return nil
	}
	tp, shutdown, err := tracing.Provider(ctx, opts.Tracing)
	if err != nil {
		return err
	}
	opts.Reconciler.Tracer = tp
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = shutdown(flush) // the collector may be gone; syncs are not traced for it
		return nil
	}))
}

// inProcess renders in the agent's own process.
type inProcess struct{}

func (inProcess) Render(ctx context.Context, root, path string, opts sourcerender.Options) (*sourcerender.Rendered, error) {
	return sourcerender.Render(ctx, root, path, opts)
}

func (inProcess) RenderFS(ctx context.Context, fsys fs.FS, path string, opts sourcerender.Options) (*sourcerender.Rendered, error) {
	return sourcerender.RenderFS(ctx, fsys, path, opts)
}

// servedTimeout bounds the wait at start for discovery to serve GitSync.
const servedTimeout = 2 * time.Minute

// waitServed waits, bounded, until discovery serves GitSync. Discovery lags
// behind the CRD's Established condition (just installed, or installed with
// the chart), and building the manager already maps GitSync (its cache asks
// whether the kind is namespaced).
func waitServed(ctx context.Context, cfg *rest.Config) error {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return err
	}
	gk := gitsyncv1.GroupVersion.WithKind("GitSync").GroupKind()
	return apply.WaitServed(ctx, mapper, gk, servedTimeout, gitsyncv1.GroupVersion.Version)
}

// cacheDir is dir, else a gitsync directory in the user cache dir.
func cacheDir(dir string) string {
	if dir != "" {
		return dir
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "gitsync")
}

// logOf is the logger for what the agent runs beside the reconciler.
func logOf(opts Options, name string) logr.Logger {
	if opts.Logger.GetSink() != nil {
		return opts.Logger.WithName(name)
	}
	return ctrl.Log.WithName(name)
}
