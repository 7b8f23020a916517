package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcluster "sigs.k8s.io/controller-runtime/pkg/cluster"

	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/internal/egress"
	"gitsync.dev/gitsync/livecache"
	"gitsync.dev/gitsync/source/helm"
)

// Target is the cluster one GitSync writes to and how. Its fields are
// read-only for callers.
type Target struct {
	// Applier applies the GitSync's objects: owner labels, default
	// namespace, force and identity are the GitSync's.
	Applier *apply.Applier
	// Client is an uncached client of the same identity, for prune
	// decisions and access reviews.
	Client client.WithWatch
	// Cache is the watch cache live objects are read from: the agent's own
	// for the local cluster, one per remote cluster.
	Cache cache.Cache
	// Remote is set when the target is a spec.kubeConfig cluster.
	Remote bool
	// Allowed is what access reviews allowed the target's identity on its
	// cluster, shared with every target of that identity and cluster.
	Allowed *Allowed

	// clients are the connections of the target's cluster.
	clients *clients

	// spec and secretRV are what the target was built from.
	spec     Spec
	secretRV string
	// stop ends a remote cluster's cache; nil for the local cluster.
	stop context.CancelFunc
	// release gives back the target's share of its cluster's clients.
	release func()
}

// Spec is what a GitSync's target is built from.
type Spec struct {
	// Key names the GitSync: Targets keeps one target per key.
	Key types.NamespacedName
	// User is the identity objects are written as: "" for the agent's own,
	// else a user name impersonated on every request
	// (system:serviceaccount:NS:NAME).
	User string
	// OwnerLabels, DefaultNamespace and Force are the applier's
	// (apply.Options).
	OwnerLabels      map[string]string
	DefaultNamespace string
	Force            bool
	// KubeConfig, when set, names the Secret in Key's namespace holding a
	// kubeconfig of a remote cluster, and its key ("value" when empty).
	KubeConfig *SecretKey
}

// SecretKey names one key of a Secret.
type SecretKey struct{ Name, Key string }

// rebuilds reports whether a target built from s must be rebuilt for o.
func (s Spec) rebuilds(o Spec) bool {
	kc := func(k *SecretKey) SecretKey {
		if k == nil {
			return SecretKey{}
		}
		return *k
	}
	return s.User != o.User || s.DefaultNamespace != o.DefaultNamespace || s.Force != o.Force ||
		(s.KubeConfig == nil) != (o.KubeConfig == nil) || kc(s.KubeConfig) != kc(o.KubeConfig)
}

// Options configure Targets.
type Options struct {
	// Config, Mapper and HTTPClient reach the local cluster as the agent
	// (the manager's); Scheme is the agent's.
	Config     *rest.Config
	Mapper     meta.RESTMapper
	HTTPClient *http.Client
	Scheme     *runtime.Scheme
	// Cache is the local cluster's watch cache (the manager's).
	Cache cache.Cache
	// Apply is the base of every target's applier options.
	Apply apply.Options
	// QPS and Burst are the client-side request budget of each cluster,
	// shared by every target writing to it; QPS <= 0 turns it off.
	QPS   float32
	Burst int
	// AllowExec lets exec credential plugins of kubeconfigs run (gitsync
	// run --allow-kubeconfig-exec): the operator vouches for every
	// kubeconfig.
	AllowExec bool
	// Egress is the only way connections to remote clusters are opened,
	// and the policy their servers are checked against.
	Egress *egress.Dialer
	// RunContext bounds remote caches: the agent's lifetime.
	RunContext func() context.Context
	// CapabilitiesChanged, when set, is told the GitSyncs whose cluster
	// started or stopped serving an API, or changed its version: a chart of
	// theirs may render differently now (Target.Capabilities).
	CapabilitiesChanged func(keys []types.NamespacedName)
}

// Targets keeps one target per GitSync, rebuilt when what it depends on
// changes. All targets of one cluster share its clients.
type Targets struct {
	opts  Options
	local *clients

	mu    sync.Mutex
	byKey map[types.NamespacedName]*Target
}

// New returns the targets of the local cluster and of the remote clusters
// GitSyncs name.
func New(opts Options) (*Targets, error) {
	if opts.Config == nil || opts.Cache == nil || opts.Scheme == nil {
		return nil, errors.New("cluster options invalid: Config, Cache and Scheme are required")
	}
	if opts.Egress == nil {
		opts.Egress = &egress.Dialer{}
	}
	if opts.RunContext == nil {
		opts.RunContext = context.Background
	}
	t := &Targets{opts: opts, byKey: map[types.NamespacedName]*Target{}}
	local, err := newClients(opts.Config, opts.Mapper, opts.HTTPClient, opts.Scheme, opts.QPS, opts.Burst,
		opts.RunContext, func() { t.capabilitiesChanged(t.local) })
	if err != nil {
		return nil, err
	}
	t.local = local
	return t, nil
}

// Capabilities are what Helm templates see of the target's cluster (its
// version and served APIs), read from its discovery once and kept until a
// CustomResourceDefinition or APIService of the cluster changes; then
// Options.CapabilitiesChanged is told, if they differ.
func (tgt *Target) Capabilities(ctx context.Context) (helm.Capabilities, error) {
	return tgt.clients.caps.get(ctx)
}

// capabilitiesChanged tells the GitSyncs of c's cluster that its
// capabilities changed.
func (t *Targets) capabilitiesChanged(c *clients) {
	if t.opts.CapabilitiesChanged == nil {
		return
	}
	var keys []types.NamespacedName
	t.mu.Lock()
	for key, tgt := range t.byKey {
		if tgt.clients == c {
			keys = append(keys, key)
		}
	}
	t.mu.Unlock()
	if len(keys) > 0 {
		t.opts.CapabilitiesChanged(keys)
	}
}

// Agent is an uncached client of the local cluster as the agent itself.
func (t *Targets) Agent() client.WithWatch { return t.local.agent().direct }

// Get returns spec's target. A remote target's kubeconfig Secret is read
// with kubeconfig (the caller's reader, which decides what it may read)
// only when refresh is set or no target exists yet, so steady-state
// reconciles send no request for it; its error is returned as it is. A
// refused or malformed kubeconfig is a *KubeconfigError; any other error
// (the remote unreachable) may pass on a retry.
func (t *Targets) Get(ctx context.Context, spec Spec, kubeconfig func(context.Context) (*corev1.Secret, error), refresh bool) (*Target, error) {
	t.mu.Lock()
	cur := t.byKey[spec.Key]
	t.mu.Unlock()
	reusable := cur != nil && !cur.spec.rebuilds(spec)
	if reusable && (spec.KubeConfig == nil || !refresh) {
		return cur, nil
	}
	var secret *corev1.Secret
	if spec.KubeConfig != nil {
		s, err := kubeconfig(ctx)
		if err != nil {
			return nil, err
		}
		if reusable && cur.secretRV == s.ResourceVersion {
			return cur, nil
		}
		secret = s
	}
	next, err := t.build(ctx, spec, secret)
	if err != nil {
		return nil, err
	}
	next.spec = spec
	if secret != nil {
		next.secretRV = secret.ResourceVersion
	}
	t.mu.Lock()
	t.byKey[spec.Key] = next
	t.mu.Unlock()
	cur.close()
	return next, nil
}

func (t *Targets) build(ctx context.Context, spec Spec, kubeconfig *corev1.Secret) (*Target, error) {
	cc, live := t.local, t.opts.Cache
	tgt := &Target{}
	if kubeconfig != nil {
		remote, err := configFromSecret(ctx, kubeconfig, spec.KubeConfig.Key, t.opts.AllowExec, t.opts.Egress)
		if err != nil {
			return nil, err
		}
		cl, stopCache, err := t.startRemote(ctx, remote)
		if err != nil {
			return nil, err
		}
		capsCtx, stopCaps := context.WithCancel(t.opts.RunContext())
		stop := func() { stopCaps(); stopCache() }
		var rc *clients // told by its own watch
		rc, err = newClients(remote, cl.GetRESTMapper(), cl.GetHTTPClient(), t.opts.Scheme, t.opts.QPS, t.opts.Burst,
			func() context.Context { return capsCtx }, func() { t.capabilitiesChanged(rc) })
		if err != nil {
			stop()
			return nil, err
		}
		cc = rc
		live, tgt.stop, tgt.Remote = cl.GetCache(), stop, true
	}
	id, err := cc.forUser(spec.User)
	if err != nil {
		tgt.close()
		return nil, err
	}
	tgt.release = id.release
	opts := t.opts.Apply
	opts.OwnerLabels = spec.OwnerLabels
	opts.DefaultNamespace = spec.DefaultNamespace
	opts.Force = spec.Force
	opts.HTTPClient, opts.Mapper, opts.Client, opts.Dynamic = id.hc, cc.mapper, id.direct, id.dyn
	applier, err := apply.New(id.cfg, live, opts)
	if err != nil {
		tgt.close()
		return nil, err
	}
	tgt.Applier, tgt.Client, tgt.Cache, tgt.clients, tgt.Allowed = applier, id.direct, live, cc, id.allowed
	return tgt, nil
}

// startRemote starts a cache for a remote cluster and waits for it to run,
// at most as long as ctx (the reconcile) lasts: a server that never
// answers like an apiserver must not hold a worker forever.
func (t *Targets) startRemote(ctx context.Context, cfg *rest.Config) (crcluster.Cluster, context.CancelFunc, error) {
	cl, err := crcluster.New(cfg, func(o *crcluster.Options) {
		o.Scheme = t.opts.Scheme
		// Only managed objects: a remote cache holds no GitSyncs.
		o.Cache = cache.Options{DefaultLabelSelector: livecache.ManagedSelector()}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("remote cluster %s: %w", cfg.Host, err)
	}
	runCtx, cancel := context.WithCancel(t.opts.RunContext())
	go func() { _ = cl.Start(runCtx) }()
	waitCtx, stopWaiting := context.WithCancel(runCtx)
	defer stopWaiting()
	stop := context.AfterFunc(ctx, stopWaiting)
	defer stop()
	if !cl.GetCache().WaitForCacheSync(waitCtx) {
		cancel()
		return nil, nil, fmt.Errorf("remote cluster %s: cache did not start", cfg.Host)
	}
	return cl, cancel, nil
}

func (tgt *Target) close() {
	if tgt == nil {
		return
	}
	if tgt.release != nil {
		tgt.release()
	}
	if tgt.stop != nil {
		tgt.stop()
	}
}

// Forget drops key's target, stopping its remote cache.
func (t *Targets) Forget(key types.NamespacedName) {
	t.mu.Lock()
	cur := t.byKey[key]
	delete(t.byKey, key)
	t.mu.Unlock()
	cur.close()
}
