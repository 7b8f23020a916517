package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/livecache"
	"gitsync.dev/gitsync/object"
	"gitsync.dev/gitsync/tenant"
)

// target is the cluster one GitSync writes to and how: its applier (owner
// labels, default namespace, force and identity are per GitSync), a direct
// client for prune decisions, and the watch cache live objects are read from.
type target struct {
	// specFP and secretRV are what the target was built from.
	specFP, secretRV string
	applier          *apply.Applier
	direct           client.WithWatch
	cache            cache.Cache
	// stop ends a remote cluster's cache; nil for the local cluster.
	stop context.CancelFunc
	// release gives back the target's share of its cluster's clients.
	release func()
}

// targets keeps one target per GitSync, rebuilt when what it depends on
// changes.
type targets struct {
	// local are the local cluster's shared clients (the manager's mapper
	// and HTTP client).
	local  *clusterClients
	cache  cache.Cache
	scheme *runtime.Scheme
	base   apply.Options
	// kubeconfig is what the operator allows in spec.kubeConfig
	// kubeconfigs, and the egress dialer remote clusters are reached by.
	kubeconfig kubeconfigOptions
	// qps and burst are the client-side request budget of each cluster.
	qps   float32
	burst int
	// runCtx bounds remote caches: the manager's lifetime.
	runCtx func() context.Context
	// defaultAccount is impersonated for GitSyncs without
	// spec.serviceAccountName (Options.DefaultServiceAccount).
	defaultAccount string

	mu    sync.Mutex
	byKey map[types.NamespacedName]*target
}

// get returns gs's target. A remote target's kubeconfig Secret is read
// through view only when refresh is set or no target exists yet.
func (t *targets) get(ctx context.Context, view *tenant.View, gs *v1.GitSync, refresh bool) (*target, error) {
	key := client.ObjectKeyFromObject(gs)
	fp := specFingerprint(gs)
	t.mu.Lock()
	cur := t.byKey[key]
	t.mu.Unlock()
	reusable := cur != nil && cur.specFP == fp
	if reusable && (gs.Spec.KubeConfig == nil || !refresh) {
		return cur, nil
	}
	var kubeconfig *corev1.Secret
	if gs.Spec.KubeConfig != nil {
		s, err := readKubeConfigSecret(ctx, view, gs)
		if err != nil {
			return nil, err
		}
		if reusable && cur.secretRV == s.ResourceVersion {
			return cur, nil
		}
		kubeconfig = s
	}
	next, err := t.build(ctx, gs, kubeconfig)
	if err != nil {
		return nil, err
	}
	next.specFP = fp
	if kubeconfig != nil {
		next.secretRV = kubeconfig.ResourceVersion
	}
	t.mu.Lock()
	t.byKey[key] = next
	t.mu.Unlock()
	_ = cur.close()
	return next, nil
}

// specFingerprint is what a target depends on in the spec.
func specFingerprint(gs *v1.GitSync) string {
	kc := ""
	if gs.Spec.KubeConfig != nil {
		kc = gs.Spec.KubeConfig.SecretRef.Name + "/" + gs.Spec.KubeConfig.SecretRef.Key
	}
	return fmt.Sprintf("%s|%s|%t|%s", gs.Spec.ServiceAccountName, defaultNamespace(gs), gs.Spec.Force, kc)
}

func defaultNamespace(gs *v1.GitSync) string {
	if gs.Spec.TargetNamespace != "" {
		return gs.Spec.TargetNamespace
	}
	return gs.Namespace
}

func (t *targets) build(ctx context.Context, gs *v1.GitSync, kubeconfig *corev1.Secret) (*target, error) {
	clients, live := t.local, t.cache
	tgt := &target{}
	if kubeconfig != nil {
		remote, err := remoteConfig(ctx, kubeconfig, gs.Spec.KubeConfig.SecretRef.Key, t.kubeconfig)
		if err != nil {
			return nil, err
		}
		cl, stop, err := t.startRemote(ctx, remote)
		if err != nil {
			return nil, retry(v1.ReasonApplyFailed, err)
		}
		if clients, err = newClusterClients(remote, cl.GetRESTMapper(), cl.GetHTTPClient(), t.scheme, t.qps, t.burst); err != nil {
			stop()
			return nil, retry(v1.ReasonApplyFailed, err)
		}
		live, tgt.stop = cl.GetCache(), stop
	}
	def := t.defaultAccount
	if kubeconfig != nil {
		def = "" // a remote cluster's identity is its kubeconfig's
	}
	id, err := clients.forUser(gs.AccountOr(def))
	if err != nil {
		return nil, errors.Join(retry(v1.ReasonApplyFailed, err), tgt.close())
	}
	tgt.release = id.release
	opts := t.base
	opts.OwnerLabels = object.OwnerLabels(gs.Name, gs.Namespace)
	opts.DefaultNamespace = defaultNamespace(gs)
	opts.Force = gs.Spec.Force
	opts.HTTPClient, opts.Mapper, opts.Client, opts.Dynamic = id.hc, clients.mapper, id.direct, id.dyn
	applier, err := apply.New(id.cfg, live, opts)
	if err != nil {
		return nil, errors.Join(err, tgt.close())
	}
	tgt.applier, tgt.direct, tgt.cache = applier, id.direct, live
	return tgt, nil
}

// startRemote starts a cache for a remote cluster and waits for it to run,
// at most as long as ctx (the reconcile) lasts: a server that never
// answers like an apiserver must not hold a worker forever.
func (t *targets) startRemote(ctx context.Context, cfg *rest.Config) (cluster.Cluster, context.CancelFunc, error) {
	cl, err := cluster.New(cfg, func(o *cluster.Options) {
		o.Scheme = t.scheme
		// Only managed objects: a remote cache holds no GitSyncs.
		o.Cache = cache.Options{DefaultLabelSelector: livecache.ManagedSelector()}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("remote cluster %s: %w", cfg.Host, err)
	}
	runCtx, cancel := context.WithCancel(t.runCtx())
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

func (tgt *target) close() error {
	if tgt == nil {
		return nil
	}
	if tgt.release != nil {
		tgt.release()
	}
	if tgt.stop != nil {
		tgt.stop()
	}
	return nil
}

// forget drops key's target, stopping its remote cache.
func (t *targets) forget(key types.NamespacedName) {
	t.mu.Lock()
	cur := t.byKey[key]
	delete(t.byKey, key)
	t.mu.Unlock()
	_ = cur.close()
}

func readKubeConfigSecret(ctx context.Context, view *tenant.View, gs *v1.GitSync) (*corev1.Secret, error) {
	ref := gs.Spec.KubeConfig.SecretRef
	s, err := view.Secret(ctx, tenant.Ref{Name: ref.Name, Field: "spec.kubeConfig.secretRef"})
	if err != nil {
		return nil, classifyRead(fmt.Errorf("Secret/%s/%s read failed: %w", gs.Namespace, ref.Name, err), v1.ReasonApplyFailed)
	}
	return s, nil
}
