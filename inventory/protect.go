package inventory

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AllowProtectedPruneAnnotation set to "true" on a protected object (the
// GitSync being reconciled, the GitSync CRD, the agent's own workload,
// ServiceAccount, RBAC and Namespace) is the explicit consent to prune it.
const AllowProtectedPruneAnnotation = "gitsync.dev/allow-protected-prune"

// ProtectedReasonPrefix starts the reason of every object a prune kept
// because it is protected.
const ProtectedReasonPrefix = "protected: "

// GitSyncCRDName is the name of the GitSync CustomResourceDefinition.
const GitSyncCRDName = "gitsyncs.gitsync.dev"

// Protection names what a prune must never delete without consent: the
// things the agent stands on. Its zero value protects the GitSync CRD only.
type Protection struct {
	// Self is the GitSync being reconciled or finalized: a repository that
	// held its own GitSync and dropped it must not delete its own sync. Other
	// GitSyncs (children of an app of apps) stay prunable; their own
	// finalizers then apply their rails.
	Self *ObjectID
	// AgentNamespace and AgentServiceAccount identify the agent: its
	// Namespace, ServiceAccount, the workloads running as it in that
	// namespace and the RBAC that binds it are protected. Empty when unknown
	// (a laptop run without a ServiceAccount).
	AgentNamespace, AgentServiceAccount string
}

// GitSyncID is the ObjectID of the GitSync namespace/name.
func GitSyncID(namespace, name string) ObjectID {
	return ObjectID{Group: "gitsync.dev", Kind: "GitSync", Namespace: namespace, Name: name}
}

// Reason returns why the live object id must not be pruned ("" when it may).
// c reads whatever the decision needs beyond live's metadata: the pod
// template of workloads in the agent's namespace, the subjects of bindings,
// the bindings of roles. A read that fails protects the object: an unchecked
// object is never deleted.
func (p Protection) Reason(ctx context.Context, c client.Reader, id ObjectID, live metav1.Object) string {
	if live.GetAnnotations()[AllowProtectedPruneAnnotation] == "true" {
		return ""
	}
	reason, err := p.reason(ctx, c, id)
	if err != nil {
		reason = fmt.Sprintf("could not check whether it belongs to the agent: %v", err)
	}
	if reason == "" {
		return ""
	}
	return fmt.Sprintf("%s%s (annotate it %s=true to allow pruning it)", ProtectedReasonPrefix, reason, AllowProtectedPruneAnnotation)
}

func (p Protection) reason(ctx context.Context, c client.Reader, id ObjectID) (string, error) {
	switch {
	case p.Self != nil && id == *p.Self:
		return "it is the GitSync being synced", nil
	case id.GroupKind() == crdGK && id.Name == GitSyncCRDName:
		return "it is the GitSync CustomResourceDefinition", nil
	case p.AgentNamespace == "":
		return "", nil
	case id.GroupKind() == namespaceGK && id.Name == p.AgentNamespace:
		return "it is the agent's Namespace", nil
	}
	sa := p.AgentServiceAccount
	switch id.Group {
	case "":
		switch id.Kind {
		case "ServiceAccount":
			if id.Namespace == p.AgentNamespace && id.Name == sa {
				return "it is the agent's ServiceAccount", nil
			}
		case "Pod":
			return p.workload(ctx, c, id, &corev1.Pod{}, func(o client.Object) string { return o.(*corev1.Pod).Spec.ServiceAccountName })
		}
	case "apps":
		switch id.Kind {
		case "Deployment":
			return p.workload(ctx, c, id, &appsv1.Deployment{}, func(o client.Object) string { return o.(*appsv1.Deployment).Spec.Template.Spec.ServiceAccountName })
		case "StatefulSet":
			return p.workload(ctx, c, id, &appsv1.StatefulSet{}, func(o client.Object) string { return o.(*appsv1.StatefulSet).Spec.Template.Spec.ServiceAccountName })
		case "DaemonSet":
			return p.workload(ctx, c, id, &appsv1.DaemonSet{}, func(o client.Object) string { return o.(*appsv1.DaemonSet).Spec.Template.Spec.ServiceAccountName })
		case "ReplicaSet":
			return p.workload(ctx, c, id, &appsv1.ReplicaSet{}, func(o client.Object) string { return o.(*appsv1.ReplicaSet).Spec.Template.Spec.ServiceAccountName })
		}
	case "batch":
		if id.Kind == "Job" {
			return p.workload(ctx, c, id, &batchv1.Job{}, func(o client.Object) string { return o.(*batchv1.Job).Spec.Template.Spec.ServiceAccountName })
		}
	case rbacv1.GroupName:
		return p.rbac(ctx, c, id)
	}
	return "", nil
}

// workload protects a workload in the agent's namespace whose pods run as
// the agent's ServiceAccount.
func (p Protection) workload(ctx context.Context, c client.Reader, id ObjectID, obj client.Object, serviceAccount func(client.Object) string) (string, error) {
	if id.Namespace != p.AgentNamespace || p.AgentServiceAccount == "" {
		return "", nil
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, obj); err != nil {
		return "", err
	}
	sa := serviceAccount(obj)
	if sa == "" {
		sa = "default"
	}
	if sa != p.AgentServiceAccount {
		return "", nil
	}
	return fmt.Sprintf("it runs the agent (ServiceAccount %s/%s)", p.AgentNamespace, sa), nil
}

// rbac protects bindings that grant the agent's ServiceAccount anything, and
// the roles such bindings refer to.
func (p Protection) rbac(ctx context.Context, c client.Reader, id ObjectID) (string, error) {
	if p.AgentServiceAccount == "" {
		return "", nil
	}
	key := client.ObjectKey{Namespace: id.Namespace, Name: id.Name}
	switch id.Kind {
	case "RoleBinding":
		rb := &rbacv1.RoleBinding{}
		if err := c.Get(ctx, key, rb); err != nil {
			return "", err
		}
		if p.grants(rb.Namespace, rb.Subjects) {
			return "it binds the agent's ServiceAccount", nil
		}
	case "ClusterRoleBinding":
		crb := &rbacv1.ClusterRoleBinding{}
		if err := c.Get(ctx, key, crb); err != nil {
			return "", err
		}
		if p.grants("", crb.Subjects) {
			return "it binds the agent's ServiceAccount", nil
		}
	case "Role":
		return p.roleBound(ctx, c, rbacv1.RoleRef{Kind: "Role", Name: id.Name}, []string{id.Namespace}, false)
	case "ClusterRole":
		// The agent's cluster-wide rights come from ClusterRoleBindings and
		// RoleBindings in its own namespace; tenants' namespaces are not
		// listed (the agent may lack the right, and it would cost a list per
		// namespace).
		return p.roleBound(ctx, c, rbacv1.RoleRef{Kind: "ClusterRole", Name: id.Name}, []string{p.AgentNamespace}, true)
	}
	return "", nil
}

// roleBound reports whether a binding in namespaces (and, with cluster, a
// ClusterRoleBinding) refers to ref and grants the agent's ServiceAccount.
func (p Protection) roleBound(ctx context.Context, c client.Reader, ref rbacv1.RoleRef, namespaces []string, cluster bool) (string, error) {
	const bound = "a binding grants it to the agent's ServiceAccount"
	if cluster {
		crbs := &rbacv1.ClusterRoleBindingList{}
		if err := c.List(ctx, crbs); err != nil {
			return "", err
		}
		for _, b := range crbs.Items {
			if b.RoleRef.Kind == ref.Kind && b.RoleRef.Name == ref.Name && p.grants("", b.Subjects) {
				return bound, nil
			}
		}
	}
	for _, ns := range namespaces {
		rbs := &rbacv1.RoleBindingList{}
		if err := c.List(ctx, rbs, client.InNamespace(ns)); err != nil {
			return "", err
		}
		for _, b := range rbs.Items {
			if b.RoleRef.Kind == ref.Kind && b.RoleRef.Name == ref.Name && p.grants(b.Namespace, b.Subjects) {
				return bound, nil
			}
		}
	}
	return "", nil
}

// grants reports whether subjects (of a binding in bindingNamespace) name
// the agent's ServiceAccount, directly or through its groups.
func (p Protection) grants(bindingNamespace string, subjects []rbacv1.Subject) bool {
	return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = bindingNamespace
			}
			return ns == p.AgentNamespace && s.Name == p.AgentServiceAccount
		case rbacv1.GroupKind:
			return s.Name == "system:serviceaccounts" || s.Name == "system:serviceaccounts:"+p.AgentNamespace
		case rbacv1.UserKind:
			return s.Name == "system:serviceaccount:"+p.AgentNamespace+":"+p.AgentServiceAccount
		}
		return false
	})
}
