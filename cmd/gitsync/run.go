package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/controller"
	"gitsync.dev/gitsync/internal/egress"
	"gitsync.dev/gitsync/livecache"
	"gitsync.dev/gitsync/metrics"
	"gitsync.dev/gitsync/source"
	sourcegit "gitsync.dev/gitsync/source/git"
	sourcerender "gitsync.dev/gitsync/source/render"
	"gitsync.dev/gitsync/source/webhook"
)

// RunOptions configures `gitsync run`, the in-cluster agent.
type RunOptions struct {
	// Target selects the cluster with kubectl's flags (shared with every
	// command); none means in-cluster config, or $KUBECONFIG /
	// ~/.kube/config on a laptop.
	Target TargetOptions
	// LeaderElect makes replicas of one shard elect one active reconciler
	// through a Lease. Defaults to true in-cluster, false elsewhere.
	LeaderElect bool
	// LeaderElectionNamespace holds the Lease; defaults to the pod's
	// namespace in-cluster.
	LeaderElectionNamespace string
	// Concurrent is how many GitSyncs are reconciled in parallel.
	Concurrent int
	// WatchNamespace limits the agent to the GitSyncs of one namespace.
	WatchNamespace string
	// Shard is a label selector on GitSyncs, so N deployments can split one
	// cluster's GitSyncs; each shard elects its own leader.
	Shard string
	// Shards "auto" makes the replicas share the GitSyncs by themselves:
	// each holds a Lease, and each GitSync belongs to one live replica
	// (run_shards.go, internal/shard).
	Shards string
	// MetricsAddr, HealthAddr and WebhookAddr are listen addresses; "0"
	// turns a listener off. Unset, they bind to loopback on a laptop and to
	// every interface in a cluster (run_listen.go).
	MetricsAddr, HealthAddr, WebhookAddr string
	// InstallCRDs applies the GitSync CRD at start, for laptops and demos;
	// in a cluster the Helm chart installs it.
	InstallCRDs bool
	// CacheDir holds Git object stores and checkouts.
	CacheDir string
	// AllowKubeconfigExec lets spec.kubeConfig kubeconfigs run exec
	// credential plugins inside the agent.
	AllowKubeconfigExec bool
	// AllowLocalSources lets GitSyncs name file:// URLs and local paths
	// (controller.Options.AllowLocalSources).
	AllowLocalSources bool
	// AllowNetworks are comma-separated CIDRs exempted from the egress deny
	// list (loopback, link-local, cloud metadata) for Git remotes and
	// kubeconfig servers.
	AllowNetworks string
	PruneMaxShare float64
	// AgentNamespace and AgentServiceAccount name the agent's own
	// ServiceAccount, protected from prunes with its workload, RBAC and
	// Namespace (default: the chart's environment, else a SelfSubjectReview).
	AgentNamespace, AgentServiceAccount string
	// MaxObjects caps the objects one revision may render to; a GitSync's
	// spec.maxObjects may only lower it (controller.Options.MaxObjects).
	MaxObjects int
	// Render bounds every render (source/sandbox) and what substitution
	// and decryption add (controller.Options.Budget).
	Render RenderLimitFlags
	// NamespaceShare is the most GitSyncs of one namespace reconciled at
	// once (controller.Options.NamespaceShare).
	NamespaceShare int
	// KubeAPIQPS and KubeAPIBurst are the client-side request budget all
	// GitSyncs share per target cluster (controller.Options.QPS, Burst).
	KubeAPIQPS   float32
	KubeAPIBurst int
	// Limits bound retries and connections per Git host
	// (controller.Options.Limits).
	Limits controller.Limits
	// LogFormat is json, console, or auto (console on a terminal, else JSON).
	LogFormat string
	// Verbose raises the log level to debug.
	Verbose bool
}

// NewRunCmd returns `gitsync run`.
func NewRunCmd(kube *genericclioptions.ConfigFlags) *cobra.Command {
	o := &RunOptions{Target: TargetOptions{Flags: kube}}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the agent: keep every GitSync's cluster in step with its Git source",
		Long: `run starts the gitsync agent. It reconciles GitSync objects: fetches their
source, applies it with server-side apply, prunes what left Git, repairs drift
as soon as a managed object changes, and reports status only when it changes.`,
		Example: `  # On a laptop against the current context, installing the CRD first
  gitsync run --install-crds

  # Two shards of one cluster
  gitsync run --shard gitsync.dev/shard=a
  gitsync run --shard gitsync.dev/shard=b`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("leader-elect") {
				o.LeaderElect = inCluster()
			}
			if err := o.shardFlags(cmd.Flags()); err != nil { // run_shards.go
				return err
			}
			if inCluster() {
				o.listenInCluster(cmd.Flags()) // run_listen.go
			}
			return o.Run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "Elect one active replica per shard through a Lease (default true in-cluster).")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader election Lease (default: the pod's namespace).")
	fs.IntVar(&o.Concurrent, "concurrent", 4, "How many GitSyncs to reconcile in parallel.")
	fs.StringVar(&o.WatchNamespace, "watch-namespace", "", "Only reconcile GitSyncs in this namespace (default: all).")
	fs.StringVar(&o.Shards, "shards", "", `"auto": replicas share the GitSyncs among themselves, each holding a Lease; turns leader election off.`)
	fs.StringVar(&o.Shard, "shard", "", "Only reconcile GitSyncs matching this label selector, e.g. gitsync.dev/shard=a.")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", defaultListen(metricsPort, false), `Address of the Prometheus /metrics endpoint; "0" disables it (default in a cluster: ":8080").`)
	fs.StringVar(&o.HealthAddr, "health-addr", defaultListen(healthPort, false), `Address of /healthz and /readyz; "0" disables them (default in a cluster: ":8081").`)
	fs.StringVar(&o.WebhookAddr, "webhook-addr", defaultListen(webhookPort, false), `Address of the Git webhook receiver; "0" disables it (default in a cluster: ":9292").`)
	fs.BoolVar(&o.InstallCRDs, "install-crds", false, "Apply the GitSync CustomResourceDefinition before starting.")
	fs.StringVar(&o.CacheDir, "cache-dir", "", "Directory for Git object stores and checkouts (default: a gitsync directory in the user cache dir).")
	fs.Float64Var(&o.PruneMaxShare, "prune-max-share", controller.DefaultOptions().PruneMaxShare, "Refuse to prune more than this share (0..1] of a GitSync's objects at once, counted above ten objects; 0 disables. A GitSync's gitsync.dev/prune-max-share annotation overrides it.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", controller.DefaultOptions().QPS, "Requests per second all GitSyncs together may send to one cluster (one budget per cluster, not per GitSync); 0 disables client-side limiting.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", controller.DefaultOptions().Burst, "Burst of the per-cluster request budget (--kube-api-qps).")
	o.Limits = controller.DefaultLimits()
	fs.Float64Var(&o.Limits.RetryQPS, "retry-qps", o.Limits.RetryQPS, "Retries per second after failures, all GitSyncs together (a token bucket on top of each GitSync's exponential backoff); 0 disables the bucket.")
	fs.IntVar(&o.Limits.RetryBurst, "retry-burst", o.Limits.RetryBurst, "Burst of the retry bucket (--retry-qps).")
	fs.IntVar(&o.Limits.GitHostConcurrency, "git-host-concurrency", o.Limits.GitHostConcurrency, "Connections the agent's Git traffic (ls-remotes, fetches) may hold open to one host address at once; 0 means no limit.")
	o.Render.AddFlags(fs, true)
	fs.IntVar(&o.NamespaceShare, "namespace-share", 0, "Most GitSyncs of one namespace reconciled at once while another namespace waits, so one tenant's slow renders cannot hold every worker; a namespace alone may use all workers but one (default: half of --concurrent, at least 1; --concurrent or more: no limit).")
	fs.IntVar(&o.MaxObjects, "max-objects", sourcerender.DefaultMaxObjects, "Refuse a revision that renders more objects than this (checked while rendering, so memory stays bounded); a GitSync's spec.maxObjects may only lower it.")
	fs.BoolVar(&o.AllowKubeconfigExec, "allow-kubeconfig-exec", false, "Allow exec credential plugins in spec.kubeConfig kubeconfigs.")
	fs.BoolVar(&o.AllowLocalSources, "allow-local-sources", false, "Allow GitSyncs to name file:// URLs and local paths (repositories on the agent's disk).")
	fs.StringVar(&o.AllowNetworks, "allow-networks", "", "Comma-separated CIDRs that Git remotes and kubeconfig servers may reach although they are loopback, link-local or cloud metadata addresses, e.g. 127.0.0.0/8.")
	fs.StringVar(&o.AgentNamespace, "agent-namespace", "", "Namespace of the agent's own ServiceAccount; prunes never delete the agent's Namespace, ServiceAccount, workload or RBAC (default: $POD_NAMESPACE, else asked of the apiserver).")
	fs.StringVar(&o.AgentServiceAccount, "agent-service-account", "", "Name of the agent's own ServiceAccount (default: $GITSYNC_SERVICE_ACCOUNT, else asked of the apiserver).")
	fs.StringVar(&o.LogFormat, "log-format", "auto", "Log format: json, console, or auto (console on a terminal, JSON otherwise).")
	fs.BoolVarP(&o.Verbose, "verbose", "v", false, "Log at debug level.")
	return cmd
}

// Run starts the agent and blocks until ctx ends or leadership is lost.
func (o *RunOptions) Run(ctx context.Context) error {
	log, err := newLogger(o.LogFormat, o.Verbose)
	if err != nil {
		return withExitCode(exitError, err)
	}
	ctrl.SetLogger(log)
	setMemoryLimit(log, int64(o.Render.Concurrency)*o.Render.Limits.Memory) // room for the render children
	cfg, err := o.restConfig()
	if err != nil {
		return withExitCode(exitError, err)
	}
	if err := metrics.CountAPIRequests(cfg, ctrlmetrics.Registry); err != nil {
		return err
	}
	scheme, err := agentScheme()
	if err != nil {
		return err
	}
	if o.InstallCRDs {
		if err := installCRD(ctx, cfg, scheme); err != nil {
			return err
		}
	}
	if err := waitServed(ctx, cfg); err != nil {
		return err
	}
	mgr, err := o.newManager(cfg, scheme)
	if err != nil {
		return err
	}
	rec, err := o.newReconciler(mgr)
	if err != nil {
		return err
	}
	if err := o.addShards(mgr, rec); err != nil {
		return err
	}
	if err := controller.IndexByURL(ctx, mgr); err != nil {
		return err
	}
	if err := o.addWebhook(mgr, rec); err != nil {
		return err
	}
	log.Info("starting gitsync agent", "version", versionString(), "shard", o.Shard, "namespace", o.WatchNamespace, "leaderElection", o.LeaderElect)
	return mgr.Start(ctx)
}

func (o *RunOptions) restConfig() (*rest.Config, error) {
	cfg, err := o.Target.RESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "gitsync-agent/" + versionString()
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}

func agentScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	return s, errors.Join(clientgoscheme.AddToScheme(s), apiextensionsv1.AddToScheme(s), gitsyncv1.AddToScheme(s))
}

func (o *RunOptions) newManager(cfg *rest.Config, scheme *runtime.Scheme) (manager.Manager, error) {
	byObject := cache.ByObject{}
	if o.WatchNamespace != "" {
		byObject.Namespaces = map[string]cache.Config{o.WatchNamespace: {}}
	}
	sel, err := o.shardSelector()
	if err != nil {
		return nil, err
	}
	if sel != nil {
		byObject.Label = sel
	}
	id := leaderElectionID(sel)
	leNamespace := o.LeaderElectionNamespace
	if leNamespace == "" && !inCluster() {
		leNamespace = "default"
		if o.WatchNamespace != "" {
			leNamespace = o.WatchNamespace
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         livecache.Options(byObject),
		Metrics:                       metricsserver.Options{BindAddress: bindOrOff(o.MetricsAddr)},
		HealthProbeBindAddress:        o.HealthAddr,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              id,
		LeaderElectionNamespace:       leNamespace,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	if !listenerOff(o.HealthAddr) {
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

func (o *RunOptions) newReconciler(mgr manager.Manager) (*controller.GitSyncReconciler, error) {
	dir := o.CacheDir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir = filepath.Join(base, "gitsync")
	}
	fopts := sourcegit.DefaultOptions()
	fopts.Dir = dir
	fetcher, err := sourcegit.NewFetcher(fopts)
	if err != nil {
		return nil, err
	}
	copts := source.DefaultCacheOptions()
	copts.Fetcher = fetcher
	ropts := sourcerender.DefaultOptions()
	ropts.MaxObjects = o.MaxObjects     // the operator's cap; GitSyncs compare theirs to the count
	renderer, err := o.Render.sandbox() // kustomize and Helm in child processes, killed at the deadline
	if err != nil {
		return nil, withExitCode(exitError, err)
	}
	copts.Render = func(ctx context.Context, root, path string, s sourcerender.Settings) (*sourcerender.Rendered, error) {
		o := ropts
		o.Settings = s // the GitSync's spec.helm and spec.ignore
		return renderer.Render(ctx, root, path, o)
	}
	srcCache, err := source.NewCache(copts)
	if err != nil {
		return nil, err
	}
	m, err := metrics.New(ctrlmetrics.Registry)
	if err != nil {
		return nil, err
	}
	opts := controller.DefaultOptions()
	opts.Fetcher, opts.Cache, opts.Metrics = fetcher, srcCache, m
	opts.MaxConcurrentReconciles = o.Concurrent
	opts.MaxObjects = o.MaxObjects
	opts.Budget, opts.NamespaceShare = o.Render.Limits, o.NamespaceShare
	opts.AllowExecPlugins = o.AllowKubeconfigExec
	opts.AllowLocalSources = o.AllowLocalSources
	if opts.Egress.Policy.Allow, err = egress.ParsePrefixes(o.AllowNetworks); err != nil {
		return nil, withExitCode(exitError, fmt.Errorf("--allow-networks: %w", err))
	}
	opts.PruneMaxShare = o.PruneMaxShare
	opts.AgentNamespace, opts.AgentServiceAccount = o.agentIdentity(context.Background(), mgr.GetConfig())
	opts.QPS, opts.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	opts.Limits = o.Limits
	return controller.New(mgr, opts)
}

func inCluster() bool {
	return os.Getenv("KUBERNETES_SERVICE_HOST") != "" && os.Getenv("KUBERNETES_SERVICE_PORT") != ""
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

// installCRD server-side applies the embedded GitSync CRD and waits until
// it is Established; Run then waits until discovery serves it.
func installCRD(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) error {
	crd, err := gitsyncv1.CRD()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	crd.TypeMeta = metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: u}
	delete(obj.Object, "status")
	if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner("gitsync"), client.ForceOwnership); err != nil {
		return fmt.Errorf("CustomResourceDefinition/%s apply failed: %w", crd.Name, err)
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// addWebhook serves the Git webhook receiver on every replica. The leader
// enqueues the GitSync directly; a replica that is not leading annotates it
// with gitsyncv1.AnnotationRequestedAt, which the leader's watch sees.
func (o *RunOptions) addWebhook(mgr manager.Manager, rec *controller.GitSyncReconciler) error {
	if listenerOff(o.WebhookAddr) {
		return nil
	}
	ropts := webhook.DefaultOptions()
	ropts.Lookup = rec.WebhookLookup(mgr.GetCache(), controller.DefaultWebhookLookupOptions()) // from the Secret watch
	ropts.Observe = rec.WebhookObserver()                                                      // metrics, and events on GitSyncs whose secret did not verify
	// A replica that is not leading forwards through a Trigger, so a burst
	// of pushes becomes one annotation patch per GitSync, not one per event.
	forward := webhook.NewTrigger()
	ropts.EnqueueAt = func(key string, at time.Time) { // at: all keys of one push share one ls-remote
		nn, ok := controller.ParseKey(key)
		if !ok {
			return
		}
		select {
		case <-mgr.Elected():
			if rec.Owns(key) { // else another replica's share: forward
				rec.TriggerAt(nn, at)
				return
			}
			forward.Enqueue(key)
		default:
			forward.Enqueue(key)
		}
	}
	if err := mgr.Add(webhookForwarder{trigger: forward, client: mgr.GetClient()}); err != nil {
		return err
	}
	receiver, err := webhook.NewReceiver(ropts)
	if err != nil {
		return err
	}
	srv := webhook.NewServer(o.WebhookAddr, receiver)
	return mgr.Add(webhookServer{srv: srv})
}

// webhookForwarder patches the GitSyncs a non-leading replica received
// webhooks for, so the leader's watch picks them up; it runs on every replica.
type webhookForwarder struct {
	trigger *webhook.Trigger
	client  client.Client
}

func (f webhookForwarder) NeedLeaderElection() bool { return false }

func (f webhookForwarder) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("webhook")
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-f.trigger.Ready():
		}
		for _, key := range f.trigger.Take() {
			nn, _ := controller.ParseKey(key)
			reqCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := controller.RequestReconcile(reqCtx, f.client, nn); err != nil {
				log.Error(err, "forward webhook to the leader", "gitsync", key)
			}
			cancel()
		}
	}
}

// webhookServer runs the receiver on every replica, leader or not.
type webhookServer struct{ srv *http.Server }

func (w webhookServer) NeedLeaderElection() bool { return false }

func (w webhookServer) Start(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- w.srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return fmt.Errorf("webhook listener %s: %w", w.srv.Addr, err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return w.srv.Shutdown(sctx)
	}
}
