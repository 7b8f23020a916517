package controller

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/health/rules"
	"gitsync.dev/gitsync/internal/egress"
	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/metrics"
	"gitsync.dev/gitsync/source"
	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/chartrepo"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/render"
)

// Options configures a GitSyncReconciler.
type Options struct {
	// Fetcher resolves refs to revisions: one listing request per resolve.
	// Required.
	Fetcher *git.Fetcher
	// Cache turns a resolved revision into rendered objects, fetching and
	// rendering only what it has not seen. Required.
	Cache *source.Cache
	// Charts reads the charts of GitSyncs whose source is a chart
	// (spec.source.chart); nil refuses such sources.
	Charts *chartrepo.Fetcher
	// Apply is the base for every GitSync's applier options; OwnerLabels,
	// DefaultNamespace and Force are filled per GitSync.
	Apply apply.Options
	// MaxConcurrentReconciles is how many GitSyncs are reconciled in parallel.
	MaxConcurrentReconciles int
	// DefaultTimeout bounds one reconcile when spec.timeout is unset.
	DefaultTimeout time.Duration
	// FinalizeTimeout bounds how long a deleting GitSync keeps its finalizer
	// while pruning fails; afterwards the finalizer is released and the
	// objects left behind are named in an event. It keeps a GitSync whose
	// objects cannot be deleted from staying Terminating forever.
	FinalizeTimeout time.Duration
	// AllowExecPlugins lets spec.kubeConfig kubeconfigs run exec credential
	// plugins. Off by default: a kubeconfig in a Secret would otherwise run
	// arbitrary programs inside the agent.
	AllowExecPlugins bool
	// AllowLocalSources lets spec.source.url name a file:// URL or a local
	// path. Off by default: a tenant could otherwise read any repository on
	// the agent's disk, the agent's own object stores included.
	AllowLocalSources bool
	// Egress is how the agent reaches what a tenant names: Git remotes over
	// http(s) and ssh, and spec.kubeConfig servers. Its zero value refuses
	// loopback, link-local, unspecified and cloud metadata addresses;
	// Egress.Policy.Allow is the operator's exemption (gitsync run
	// --allow-networks). Tests replace Egress.Dial with a recorder.
	Egress egress.Dialer
	// DefaultServiceAccount is the account, in its own namespace, of every
	// GitSync without spec.serviceAccountName (gitsync run
	// --default-service-account): it is impersonated for the GitSync's
	// writes, and the objects the GitSync names are read only if it may.
	// Empty leaves such GitSyncs with the agent's rights in their
	// namespace.
	DefaultServiceAccount string
	// AgentNamespace and AgentServiceAccount identify the agent's own
	// workload: no prune deletes its Namespace, its ServiceAccount, the
	// workloads running as it in its namespace or the RBAC granting it
	// rights, unless the object carries inventory's consent annotation.
	// Empty when unknown (a laptop run without a ServiceAccount).
	AgentNamespace, AgentServiceAccount string
	// PruneMaxShare is the largest share of an inventory one sync may prune
	// (inventory.PruneOptions.MaxShare); 0 turns the limit off. It stops a
	// render that silently lost most of a large app from deleting it; the
	// limit counts only above inventory's MaxShareMinStale stale objects, so
	// small repositories replacing files are not refused. A GitSync can
	// override it with the gitsync.dev/prune-max-share annotation.
	PruneMaxShare float64
	// MaxObjects is the operator's cap on the objects one revision may
	// render to (gitsync run --max-objects). The Cache must render with the
	// same render.Options.MaxObjects; a GitSync's spec.maxObjects may
	// only lower it.
	MaxObjects int
	// MinBackoff is the first retry delay after a transient failure; it
	// doubles per failure up to spec.retryInterval.
	MinBackoff time.Duration
	// Jitter is the largest fraction added to spec.interval on requeue, so
	// GitSyncs created together do not poll together.
	Jitter float64
	// Limits bound retries and connections per Git host.
	Limits Limits
	// CommitStatusTimeout bounds one spec.commitStatus post, the Secret
	// read included; zero means commitstatus.DefaultTimeout. Tests
	// lengthen it.
	CommitStatusTimeout time.Duration
	// Metrics, when set, receives reconcile, apply and prune counts.
	Metrics *metrics.Metrics
	// Tracer, when set, receives a trace of each sync (package tracing);
	// nil makes none.
	Tracer trace.TracerProvider
	// QPS and Burst are the client-side request budget of all GitSyncs
	// writing to one cluster together (applies, dry-runs, prunes): one
	// token bucket per cluster, so the agent's request rate does not grow
	// with the number of GitSyncs or MaxConcurrentReconciles. The default is
	// above what the benchmark's apiserver sustains (~640 applies/s on two
	// cores, bench/RESULTS.md), so it caps a runaway rather than pacing
	// normal work; the apiserver's priority and fairness shares it with
	// other clients. QPS <= 0 turns client-side limiting off.
	QPS   float32
	Burst int
	// Budget bounds what substitution and decryption may add to one sync
	// (Budget.OutputBytes, shared by both); the Cache's renderer takes the
	// same limits (gitsync run --render-*). Zero fields take
	// budget.DefaultLimits.
	Budget budget.Limits
	// NamespaceShare is the most reconciles of one namespace (one tenant)
	// that run at once, so one tenant's slow renders cannot hold every
	// worker while another's commit waits. 0 means half of
	// MaxConcurrentReconciles, at least one; MaxConcurrentReconciles or
	// more, or a negative value, means no limit.
	NamespaceShare int
	// HealthRules are the operator's CEL health rules (gitsync run
	// --health-rules), for every GitSync; a GitSync's spec.healthChecks
	// rule for the same group and kind wins. New refuses rules that do not
	// compile.
	HealthRules []rules.Rule
}

// DefaultOptions returns the options `gitsync run` starts from.
func DefaultOptions() Options {
	return Options{
		Apply:                   apply.DefaultOptions(),
		MaxConcurrentReconciles: 4,
		DefaultTimeout:          5 * time.Minute,
		FinalizeTimeout:         10 * time.Minute,
		MinBackoff:              time.Second,
		PruneMaxShare:           inventory.DefaultPruneOptions().MaxShare,
		Jitter:                  0.1,
		Limits:                  DefaultLimits(),
		MaxObjects:              render.DefaultMaxObjects,
		QPS:                     1000,
		Burst:                   2000,
	}
}

func (o Options) withDefaults() (Options, error) {
	if o.Fetcher == nil || o.Cache == nil {
		return o, errors.New("controller options invalid: Fetcher and Cache are required")
	}
	if _, err := rules.Compile(o.HealthRules); err != nil {
		return o, fmt.Errorf("controller options invalid: HealthRules: %w", err)
	}
	def := DefaultOptions()
	if o.Tracer == nil {
		o.Tracer = noop.NewTracerProvider()
	}
	if o.Apply.FieldManager == "" {
		o.Apply = def.Apply
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = def.MaxConcurrentReconciles
	}
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = def.DefaultTimeout
	}
	if o.FinalizeTimeout <= 0 {
		o.FinalizeTimeout = def.FinalizeTimeout
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = def.MinBackoff
	}
	if o.MaxObjects <= 0 {
		o.MaxObjects = def.MaxObjects
	}
	if o.Jitter < 0 {
		o.Jitter = 0
	}
	o.Budget = o.Budget.WithDefaults()
	return o, nil
}
