package inventory

import (
	"context"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/object"
)

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
	Self *object.ID
	// AgentNamespace and AgentServiceAccount identify the agent: its
	// Namespace, ServiceAccount, the workloads running as it in that
	// namespace and the RBAC that binds it are protected. Empty when unknown
	// (a laptop run without a ServiceAccount).
	AgentNamespace, AgentServiceAccount string
}

// GitSyncID is the object.ID of the GitSync namespace/name.
func GitSyncID(namespace, name string) object.ID {
	return object.ID{Group: "gitsync.dev", Kind: "GitSync", Namespace: namespace, Name: name}
}

// Reason returns why the live object id must not be pruned ("" when it may).
// c reads whatever the decision needs beyond live's metadata: the pod
// template of workloads in the agent's namespace, the subjects of bindings,
// the bindings of roles. A read that fails protects the object: an unchecked
// object is never deleted.
func (p Protection) Reason(ctx context.Context, c client.Reader, id object.ID, live metav1.Object) string {
	if live.GetAnnotations()[v1.AnnotationAllowProtectedPrune] == "true" {
		return ""
	}
	reason, err := p.reason(ctx, c, id)
	if err != nil {
		reason = fmt.Sprintf("could not check whether it belongs to the agent: %v", err)
	}
	if reason == "" {
		return ""
	}
	return fmt.Sprintf("%s%s (annotate it %s=true to allow pruning it)", ProtectedReasonPrefix, reason, v1.AnnotationAllowProtectedPrune)
}

func (p Protection) reason(ctx context.Context, c client.Reader, id object.ID) (string, error) {
	switch {
	case p.Self != nil && id == *p.Self:
		return "it is the GitSync being synced", nil
	case id.GroupKind() == object.CRDKind && id.Name == GitSyncCRDName:
		return "it is the GitSync CustomResourceDefinition", nil
	case p.AgentNamespace == "":
		return "", nil
	case id.GroupKind() == object.NamespaceKind && id.Name == p.AgentNamespace:
		return "it is the agent's Namespace", nil
	case id.GroupKind() == serviceAccountGK && id.Namespace == p.AgentNamespace && id.Name == p.AgentServiceAccount:
		return "it is the agent's ServiceAccount", nil
	case id.Group == rbacv1.GroupName:
		return p.rbac(ctx, c, id)
	}
	if field, ok := podServiceAccountFields[id.GroupKind()]; ok {
		return p.workload(ctx, c, id, field)
	}
	return "", nil
}

var serviceAccountGK = schema.GroupKind{Kind: "ServiceAccount"}

// podServiceAccountField is where a workload kind names the ServiceAccount
// its pods run as, and the version it is read as.
type podServiceAccountField struct {
	version string
	path    []string
}

// podServiceAccountFields are the workload kinds the agent can run as.
var podServiceAccountFields = map[schema.GroupKind]podServiceAccountField{
	{Kind: "Pod"}:                        {"v1", []string{"spec", "serviceAccountName"}},
	{Group: "apps", Kind: "Deployment"}:  {"v1", podTemplateServiceAccount},
	{Group: "apps", Kind: "StatefulSet"}: {"v1", podTemplateServiceAccount},
	{Group: "apps", Kind: "DaemonSet"}:   {"v1", podTemplateServiceAccount},
	{Group: "apps", Kind: "ReplicaSet"}:  {"v1", podTemplateServiceAccount},
	{Group: "batch", Kind: "Job"}:        {"v1", podTemplateServiceAccount},
}

var podTemplateServiceAccount = []string{"spec", "template", "spec", "serviceAccountName"}

// workload protects a workload in the agent's namespace whose pods run as
// the agent's ServiceAccount.
func (p Protection) workload(ctx context.Context, c client.Reader, id object.ID, field podServiceAccountField) (string, error) {
	if id.Namespace != p.AgentNamespace || p.AgentServiceAccount == "" {
		return "", nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(id.GroupKind().WithVersion(field.version))
	if err := c.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, obj); err != nil {
		return "", err
	}
	sa, _, _ := unstructured.NestedString(obj.Object, field.path...)
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
func (p Protection) rbac(ctx context.Context, c client.Reader, id object.ID) (string, error) {
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
