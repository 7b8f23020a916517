package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/cluster"
	"gitsync.dev/gitsync/object"
	"gitsync.dev/gitsync/tenant"
)

// target returns the cluster gs writes to and how (cluster.Targets keeps
// it between reconciles). A spec.kubeConfig Secret is read through view
// only when refresh is set or no target exists yet, so a converged
// GitSync sends no request for it.
func (r *GitSyncReconciler) target(ctx context.Context, view *tenant.View, gs *v1.GitSync, refresh bool) (*cluster.Target, error) {
	kubeconfig := func(ctx context.Context) (*corev1.Secret, error) { return readKubeConfigSecret(ctx, view, gs) }
	tgt, err := r.targets.Get(ctx, r.targetSpec(gs), kubeconfig, refresh)
	return tgt, classifyTarget(err)
}

// targetSpec is what gs's target is built from: its owner labels and
// default namespace, force, its spec.kubeConfig and the identity it writes
// as: its account (spec.serviceAccountName, else the operator's default),
// impersonated, or the agent; on a remote cluster, the kubeconfig's.
func (r *GitSyncReconciler) targetSpec(gs *v1.GitSync) cluster.Spec {
	spec := cluster.Spec{
		Key:              client.ObjectKeyFromObject(gs),
		OwnerLabels:      object.OwnerLabels(gs.Name, gs.Namespace),
		DefaultNamespace: defaultNamespace(gs),
		Force:            gs.Spec.Force,
	}
	def := r.opts.DefaultServiceAccount
	if kc := gs.Spec.KubeConfig; kc != nil {
		spec.KubeConfig = &cluster.SecretKey{Name: kc.SecretRef.Name, Key: kc.SecretRef.Key}
		def = "" // a remote cluster's identity is its kubeconfig's
	}
	spec.User = gs.AccountOr(def)
	return spec
}

func defaultNamespace(gs *v1.GitSync) string {
	if gs.Spec.TargetNamespace != "" {
		return gs.Spec.TargetNamespace
	}
	return gs.Namespace
}

func readKubeConfigSecret(ctx context.Context, view *tenant.View, gs *v1.GitSync) (*corev1.Secret, error) {
	ref := gs.Spec.KubeConfig.SecretRef
	s, err := view.Secret(ctx, tenant.Ref{Name: ref.Name, Field: "spec.kubeConfig.secretRef"})
	if err != nil {
		return nil, classifyRead(fmt.Errorf("Secret/%s/%s read failed: %w", gs.Namespace, ref.Name, err), v1.ReasonApplyFailed)
	}
	return s, nil
}
