package agent

import (
	"context"
	"io/fs"
	"net"
	"os"

	"gitsync.dev/gitsync/tracing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"gitsync.dev/gitsync/controller"
	sourcegit "gitsync.dev/gitsync/source/git"
	sourcerender "gitsync.dev/gitsync/source/render"
	"gitsync.dev/gitsync/source/webhook"
)

// Options configure an Agent: what `gitsync run`'s flags say, and what a
// test replaces (the egress dialer, the metrics registry, a listener).
type Options struct {
	// Reconciler is the base of the reconciler's options (concurrency,
	// timeouts, prune rails, egress, limits, request budget). The agent
	// fills Fetcher, Cache and Metrics, and AgentNamespace and
	// AgentServiceAccount when they are empty (see Identity below).
	Reconciler controller.Options
	// Fetch is the base of the Git fetcher's options; Dir is CacheDir.
	Fetch sourcegit.Options
	// CacheDir holds Git object stores and checkouts; empty: a gitsync
	// directory in the user cache dir (else the temp dir).
	CacheDir string

	// Namespace limits the agent to the GitSyncs of one namespace; empty:
	// all.
	Namespace string
	// AlsoNamespaces are more namespaces served beside Namespace (tests of
	// tenants in several namespaces).
	AlsoNamespaces []string
	// Shard is a label selector on GitSyncs, so N deployments can split
	// one cluster's GitSyncs; each shard elects its own leader.
	Shard string
	// ShareReplicas makes the replicas of one group (same Shard and
	// Namespace) share the GitSyncs by themselves: each holds a Lease, and
	// each GitSync belongs to one live replica (internal/shard). It
	// excludes LeaderElection.
	ShareReplicas bool
	// LeaderElection makes replicas of one shard elect one active
	// reconciler through a Lease in LeaderElectionNamespace (default: the
	// pod's namespace in a cluster; elsewhere Namespace, else "default").
	LeaderElection          bool
	LeaderElectionNamespace string

	// MetricsAddr, HealthAddr and WebhookAddr are listen addresses; "0" or
	// empty turns a listener off.
	MetricsAddr, HealthAddr, WebhookAddr string
	// WebhookListener, when set, is where the webhook receiver serves
	// instead of listening on WebhookAddr (tests pass one on a free port).
	WebhookListener net.Listener
	// Webhook is the base of the webhook receiver's options (body cap,
	// replay memory, clock). The agent sets Lookup, Observe and EnqueueAt;
	// an EnqueueAt set here is called too, before the agent routes the key
	// (tests count what the receiver enqueued).
	Webhook webhook.Options
	// WebhookLookup says how long a webhook Secret read with a GET (where
	// the agent may not watch it) is reused.
	WebhookLookup controller.WebhookLookupOptions

	// Renderer renders the revision cache's paths with the options the
	// agent composes (its object cap, each GitSync's render settings):
	// gitsync run's is a sandbox that runs kustomize and Helm in child
	// processes with its --render-* limits. Nil renders in the agent's
	// process.
	Renderer Renderer
	// RenderMemory is what render children may use together (their
	// concurrency times each one's memory limit): it is left out of the Go
	// runtime's share of the container's memory (SetMemoryLimit).
	RenderMemory int64

	// InstallCRDs applies the GitSync CRD before starting, for laptops and
	// demos; in a cluster the Helm chart installs it.
	InstallCRDs bool
	// SetMemoryLimit sets the Go runtime's soft memory limit from the
	// container's cgroup limit (unless GOMEMLIMIT is set). It is a
	// process-wide setting: tests running agents in their own process
	// leave it off.
	SetMemoryLimit bool
	// Registry receives gitsync's metrics and the API request counter;
	// nil: controller-runtime's registry, served on MetricsAddr.
	Registry prometheus.Registerer
	// Logger is the manager's and the reconciler's logger; zero: the
	// global logger (ctrl.SetLogger).
	Logger logr.Logger
	// SkipNameValidation lets several agents run in one process (tests):
	// controller-runtime refuses a second controller of the same name.
	SkipNameValidation bool
	// Tracing says where traces of the syncs go (OTLP/HTTP); no endpoint:
	// none are made.
	Tracing tracing.Options
}

// Renderer renders one path of a checkout; *sandbox.Sandbox is one.
type Renderer interface {
	Render(ctx context.Context, root, path string, opts sourcerender.Options) (*sourcerender.Rendered, error)
}

// A TreeRenderer is a Renderer that also renders plain YAML from a Git tree
// held in memory (render.RenderFS), under the budget its Render gives plain
// paths, so the revision cache need not write a checkout for them;
// *sandbox.Sandbox is one. A Renderer that is not one is given checkouts.
type TreeRenderer interface {
	Renderer
	RenderFS(ctx context.Context, fsys fs.FS, path string, opts sourcerender.Options) (*sourcerender.Rendered, error)
}

// DefaultOptions are `gitsync run`'s defaults: the reconciler's defaults,
// every listener off, leader election off, the memory limit set from the
// cgroup.
func DefaultOptions() Options {
	return Options{
		Reconciler:     controller.DefaultOptions(),
		Fetch:          sourcegit.DefaultOptions(),
		Webhook:        webhook.DefaultOptions(),
		WebhookLookup:  controller.DefaultWebhookLookupOptions(),
		SetMemoryLimit: true,
	}
}

// InCluster reports whether the agent runs in a pod (the service account
// environment a kubelet sets).
func InCluster() bool {
	return os.Getenv("KUBERNETES_SERVICE_HOST") != "" && os.Getenv("KUBERNETES_SERVICE_PORT") != ""
}

// listenerOff reports whether addr turns a listener off: "0", the same for
// every listener (an empty value too).
func listenerOff(addr string) bool {
	return addr == "0" || addr == ""
}

// bindOrOff is addr for controller-runtime's metrics server, which knows
// only "0" as off.
func bindOrOff(addr string) string {
	if listenerOff(addr) {
		return "0"
	}
	return addr
}

func (o Options) registry() prometheus.Registerer {
	if o.Registry == nil {
		return ctrlmetrics.Registry
	}
	return o.Registry
}
