package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"gitsync.dev/gitsync/agent"
	"gitsync.dev/gitsync/controller"
	"gitsync.dev/gitsync/internal/egress"
	sourcerender "gitsync.dev/gitsync/source/render"
)

// runOptions configures `gitsync run`, the in-cluster agent: the agent's
// options as the flags set them, and what only the command knows.
type runOptions struct {
	// target selects the cluster with kubectl's flags (shared with every
	// command); none means in-cluster config, or $KUBECONFIG /
	// ~/.kube/config on a laptop.
	target targetOptions
	agent  agent.Options
	// shards "auto" makes the replicas share the GitSyncs by themselves
	// (agent.Options.ShareReplicas).
	shards string
	// render bounds every render (source/sandbox) and what substitution
	// and decryption add (controller.Options.Budget).
	render renderLimitFlags
	// allowNetworks are comma-separated CIDRs exempted from the egress deny
	// list (loopback, link-local, cloud metadata) for Git remotes and
	// kubeconfig servers.
	allowNetworks string
	// logFormat is json, console, or auto (console on a terminal, else JSON).
	logFormat string
	// verbose raises the log level to debug.
	verbose bool
	// healthRules are the operator's CEL health rules for every GitSync
	// (controller.Options.HealthRules).
	healthRules healthRuleFlags
}

// newRunCmd returns `gitsync run`.
func newRunCmd(kube *genericclioptions.ConfigFlags) *cobra.Command {
	o := &runOptions{target: targetOptions{Flags: kube}, agent: agent.DefaultOptions()}
	a, r := &o.agent, &o.agent.Reconciler
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
				a.LeaderElection = agent.InCluster()
			}
			if err := o.shardFlags(cmd.Flags()); err != nil {
				return err
			}
			if agent.InCluster() {
				o.listenInCluster(cmd.Flags())
			}
			return o.run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&a.LeaderElection, "leader-elect", false, "Elect one active replica per shard through a Lease (default true in-cluster).")
	fs.StringVar(&a.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader election Lease (default: the pod's namespace).")
	fs.IntVar(&r.MaxConcurrentReconciles, "concurrent", 4, "How many GitSyncs to reconcile in parallel.")
	fs.StringVar(&a.Namespace, "watch-namespace", "", "Only reconcile GitSyncs in this namespace (default: all).")
	fs.StringVar(&o.shards, "shards", "", `"auto": replicas share the GitSyncs among themselves, each holding a Lease; turns leader election off.`)
	fs.StringVar(&a.Shard, "shard", "", "Only reconcile GitSyncs matching this label selector, e.g. gitsync.dev/shard=a.")
	fs.StringVar(&a.MetricsAddr, "metrics-addr", defaultListen(metricsPort, false), `Address of the Prometheus /metrics endpoint; "0" disables it (default in a cluster: ":8080").`)
	fs.StringVar(&a.HealthAddr, "health-addr", defaultListen(healthPort, false), `Address of /healthz and /readyz; "0" disables them (default in a cluster: ":8081").`)
	fs.StringVar(&a.WebhookAddr, "webhook-addr", defaultListen(webhookPort, false), `Address of the Git webhook receiver; "0" disables it (default in a cluster: ":9292").`)
	fs.BoolVar(&a.InstallCRDs, "install-crds", false, "Apply the GitSync CustomResourceDefinition before starting.")
	fs.StringVar(&a.CacheDir, "cache-dir", "", "Directory for Git object stores and checkouts (default: a gitsync directory in the user cache dir).")
	fs.Float64Var(&r.PruneMaxShare, "prune-max-share", controller.DefaultOptions().PruneMaxShare, "Refuse to prune more than this share (0..1] of a GitSync's objects at once, counted above ten objects; 0 disables. A GitSync's gitsync.dev/prune-max-share annotation overrides it.")
	fs.Float32Var(&r.QPS, "kube-api-qps", controller.DefaultOptions().QPS, "Requests per second all GitSyncs together may send to one cluster (one budget per cluster, not per GitSync); 0 disables client-side limiting.")
	fs.IntVar(&r.Burst, "kube-api-burst", controller.DefaultOptions().Burst, "Burst of the per-cluster request budget (--kube-api-qps).")
	fs.Float64Var(&r.Limits.RetryQPS, "retry-qps", controller.DefaultLimits().RetryQPS, "Retries per second after failures, all GitSyncs together (a token bucket on top of each GitSync's exponential backoff); 0 disables the bucket.")
	fs.IntVar(&r.Limits.RetryBurst, "retry-burst", controller.DefaultLimits().RetryBurst, "Burst of the retry bucket (--retry-qps).")
	fs.IntVar(&r.Limits.GitHostConcurrency, "git-host-concurrency", controller.DefaultLimits().GitHostConcurrency, "Connections the agent's Git traffic (ls-remotes, fetches) may hold open to one host address at once; 0 means no limit.")
	o.render.AddFlags(fs, true)
	fs.IntVar(&r.NamespaceShare, "namespace-share", 0, "Most GitSyncs of one namespace reconciled at once while another namespace waits, so one tenant's slow renders cannot hold every worker; a namespace alone may use all workers but one (default: half of --concurrent, at least 1; --concurrent or more: no limit).")
	fs.IntVar(&r.MaxObjects, "max-objects", sourcerender.DefaultMaxObjects, "Refuse a revision that renders more objects than this (checked while rendering, so memory stays bounded); a GitSync's spec.maxObjects may only lower it.")
	fs.BoolVar(&r.AllowExecPlugins, "allow-kubeconfig-exec", false, "Allow exec credential plugins in spec.kubeConfig kubeconfigs.")
	fs.BoolVar(&r.AllowLocalSources, "allow-local-sources", false, "Allow GitSyncs to name file:// URLs and local paths (repositories on the agent's disk).")
	fs.StringVar(&o.allowNetworks, "allow-networks", "", "Comma-separated CIDRs that Git remotes and kubeconfig servers may reach although they are loopback, link-local or cloud metadata addresses, e.g. 127.0.0.0/8.")
	fs.StringVar(&r.AgentNamespace, "agent-namespace", "", "Namespace of the agent's own ServiceAccount; prunes never delete the agent's Namespace, ServiceAccount, workload or RBAC (default: $POD_NAMESPACE, else asked of the apiserver).")
	fs.StringVar(&r.DefaultServiceAccount, "default-service-account", "", "ServiceAccount, in each GitSync's own namespace, used for a GitSync that sets no spec.serviceAccountName: it must be allowed to get the Secrets and ConfigMaps the GitSync names, and it is impersonated for writes (except with spec.kubeConfig, whose identity is the kubeconfig's). Empty: such GitSyncs read and write with the agent's own rights.")
	fs.StringVar(&r.AgentServiceAccount, "agent-service-account", "", "Name of the agent's own ServiceAccount (default: $GITSYNC_SERVICE_ACCOUNT, else asked of the apiserver).")
	o.healthRules.AddFlags(fs, "the objects of every GitSync (a GitSync's own spec.healthChecks rule for the same kind wins); read at start")
	fs.StringVar(&a.Tracing.Endpoint, "otlp-endpoint", "", "OTLP/HTTP collector to send a trace of each sync to (spans resolve, load, fetch, render, apply, prune, health), e.g. http://otel-collector.monitoring:4318; headers and CA from the standard OTEL_EXPORTER_OTLP_* variables. Empty: no traces.")
	fs.StringVar(&o.logFormat, "log-format", "auto", "Log format: json, console, or auto (console on a terminal, JSON otherwise).")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "Log at debug level.")
	return cmd
}

// run starts the agent and blocks until ctx ends or leadership is lost.
func (o *runOptions) run(ctx context.Context) error {
	log, err := newLogger(o.logFormat, o.verbose)
	if err != nil {
		return withExitCode(exitError, err)
	}
	ctrl.SetLogger(log)
	if err := o.healthRules.Load(); err != nil {
		return withExitCode(exitError, fmt.Errorf("--health-rules: %w", err))
	}
	o.agent.Reconciler.HealthRules = o.healthRules.loaded
	if o.agent.Reconciler.Egress.Policy.Allow, err = egress.ParsePrefixes(o.allowNetworks); err != nil {
		return withExitCode(exitError, fmt.Errorf("--allow-networks: %w", err))
	}
	sb, err := o.render.sandbox() // kustomize and Helm in child processes, killed at the deadline
	if err != nil {
		return withExitCode(exitError, err)
	}
	o.agent.Renderer, o.agent.Reconciler.Budget = sb, o.render.Limits
	o.agent.RenderMemory = int64(o.render.Concurrency) * o.render.Limits.Memory // room for the render children
	cfg, err := o.restConfig()
	if err != nil {
		return withExitCode(exitError, err)
	}
	o.agent.Tracing.ServiceVersion = versionString()
	a, err := agent.New(ctx, cfg, o.agent)
	if err != nil {
		return err
	}
	log.Info("starting gitsync agent", "version", versionString(), "shard", o.agent.Shard, "namespace", o.agent.Namespace, "leaderElection", o.agent.LeaderElection)
	return a.Start(ctx)
}

func (o *runOptions) restConfig() (*rest.Config, error) {
	cfg, err := o.target.RESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "gitsync-agent/" + versionString()
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}
