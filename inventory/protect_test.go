package inventory

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/object"
)

// createOwned creates obj with the sync's owner labels and returns its entry.
func createOwned(t *testing.T, ns string, obj client.Object, id object.ID) Entry {
	t.Helper()
	obj.SetLabels(object.OwnerLabels(owner, ns))
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %s: %v", id, err)
	}
	return Entry{ID: id, UID: obj.GetUID(), Version: "v1"}
}

// TestPruneKeepsTheAgentsFooting: a repository that lists the agent's own
// ServiceAccount, the workload running as it, the bindings granting it
// rights and the roles they grant, then drops them, deletes none of them;
// look-alikes that do not belong to the agent are pruned as usual, and the
// consent annotation lets a protected object go. (Checked: with the Protect
// call removed from inspect, every protected object is pruned.)
func TestPruneKeepsTheAgentsFooting(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	rbacID := func(kind, ns, name string) object.ID {
		return object.ID{Group: rbacv1.GroupName, Kind: kind, Namespace: ns, Name: name}
	}
	pod := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "agent"}}}
	deployment := func(name, sa string) *appsv1.Deployment {
		spec := *pod.DeepCopy()
		spec.ServiceAccountName = sa
		sel := map[string]string{"app": name}
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: spec},
		}}
	}
	agentSubject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent", Namespace: ns}}
	otherSubject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "tenant", Namespace: ns}}
	rule := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}
	clusterRoleName, otherClusterRole := "gitsync-test-agent-"+ns, "gitsync-test-tenant-"+ns

	e := map[string]Entry{
		"sa":             createOwned(t, ns, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}}, object.ID{Kind: "ServiceAccount", Namespace: ns, Name: "agent"}),
		"other sa":       createOwned(t, ns, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}}, object.ID{Kind: "ServiceAccount", Namespace: ns, Name: "tenant"}),
		"deployment":     createOwned(t, ns, deployment("agent", "agent"), object.ID{Group: "apps", Kind: "Deployment", Namespace: ns, Name: "agent"}),
		"other deploy":   createOwned(t, ns, deployment("web", "tenant"), object.ID{Group: "apps", Kind: "Deployment", Namespace: ns, Name: "web"}),
		"role":           createOwned(t, ns, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}, Rules: rule}, rbacID("Role", ns, "agent")),
		"other role":     createOwned(t, ns, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}, Rules: rule}, rbacID("Role", ns, "tenant")),
		"rolebinding":    createOwned(t, ns, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}, Subjects: agentSubject, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "agent"}}, rbacID("RoleBinding", ns, "agent")),
		"other binding":  createOwned(t, ns, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}, Subjects: otherSubject, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"}}, rbacID("RoleBinding", ns, "tenant")),
		"clusterrole":    createOwned(t, ns, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: clusterRoleName}, Rules: rule}, rbacID("ClusterRole", "", clusterRoleName)),
		"other clusterr": createOwned(t, ns, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: otherClusterRole}, Rules: rule}, rbacID("ClusterRole", "", otherClusterRole)),
		"crb":            createOwned(t, ns, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: clusterRoleName}, Subjects: agentSubject, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRoleName}}, rbacID("ClusterRoleBinding", "", clusterRoleName)),
		"consented":      createOwned(t, ns, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent-extra", Annotations: map[string]string{v1.AnnotationAllowProtectedPrune: "true"}}, Subjects: agentSubject, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "retired"}}, rbacID("RoleBinding", ns, "agent-extra")),
	}
	for _, name := range []string{clusterRoleName, otherClusterRole} {
		t.Cleanup(func() {
			_ = env.Client.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}})
			_ = env.Client.Delete(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}})
		})
	}
	var all []Entry
	for _, en := range e {
		all = append(all, en)
	}
	opts := testOptions(t, ns)
	opts.Protect = Protection{AgentNamespace: ns, AgentServiceAccount: "agent"}
	res, err := prune(t, watchClient(t), New(all...), New(), opts.ForDeletion())
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	got := map[string]Action{}
	for name, en := range e {
		got[name] = actionOf(res, en.ID)
	}
	want := map[string]Action{
		"sa": ActionKept, "deployment": ActionKept, "role": ActionKept, "rolebinding": ActionKept,
		"clusterrole": ActionKept, "crb": ActionKept,
		"other sa": ActionPruned, "other deploy": ActionPruned, "other role": ActionPruned,
		"other binding": ActionPruned, "other clusterr": ActionPruned, "consented": ActionPruned,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if r := reasons(res)[e["sa"].ID.String()]; !strings.Contains(r, "protected") || !strings.Contains(r, v1.AnnotationAllowProtectedPrune) {
		t.Errorf("reason for the agent's ServiceAccount = %q, want it to say protected and name the consent annotation", r)
	}
}

// TestPruneNeverDeletesItsOwnGitSync: the sync's own object (Self) and the
// GitSync CRD are kept even when every rail would let them go. (Checked:
// without the Self case in Protection.reason the Self object is deleted.)
func TestPruneNeverDeletesItsOwnGitSync(t *testing.T) {
	ns := env.Namespace(t)
	// A ConfigMap stands in for the GitSync: Protection compares IDs only.
	self := ours(t, ns, "self")
	sibling := ours(t, ns, "sibling")
	opts := testOptions(t, ns)
	opts.Protect = Protection{Self: &self.ID}
	res, err := prune(t, watchClient(t), New(self, sibling), New(), opts.ForDeletion())
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	want := map[string]Action{"ConfigMap/" + ns + "/self": ActionKept, "ConfigMap/" + ns + "/sibling": ActionPruned}
	if diff := cmp.Diff(want, actions(res)); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if !exists(t, self) {
		t.Error("the sync's own object was deleted")
	}
}

// TestConsentedSelfPruneDoesNotWaitOnItself: with consent the sync's own
// object is deleted, and Execute does not wait for it to be gone (its
// finalizer would only run after this reconcile). A finalizer holds it here,
// so waiting would fail the stage when its bound runs out. (Checked: without
// the Self case in Execute the entry fails with "not deleted within".)
func TestConsentedSelfPruneDoesNotWaitOnItself(t *testing.T) {
	ns := env.Namespace(t)
	self := createCM(t, ns, "self", object.OwnerLabels(owner, ns), map[string]string{v1.AnnotationAllowProtectedPrune: "true"}, "example.com/hold")
	t.Cleanup(func() { releaseFinalizers(t, self) })
	opts := testOptions(t, ns)
	opts.Protect = Protection{Self: &self.ID}
	opts.Timeout = 15 * time.Second // a wait on the held object would end failed
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	plan, err := Plan(ctx, watchClient(t), New(self), New(), opts.ForDeletion())
	if err != nil {
		t.Fatal(err)
	}
	res, err := plan.Execute(ctx, watchClient(t))
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if got := actionOf(res, self.ID); got != ActionPruned {
		t.Errorf("action = %q, want %q", got, ActionPruned)
	}
}

func actionOf(res *PruneResult, id object.ID) Action {
	for _, e := range res.Entries {
		if e.ID == id {
			return e.Action
		}
	}
	return ""
}

// releaseFinalizers removes the finalizers of e's ConfigMap so it can go.
func releaseFinalizers(t *testing.T, e Entry) {
	t.Helper()
	obj := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: e.ID.Namespace, Name: e.ID.Name}, obj); err != nil {
		return
	}
	obj.Finalizers = nil
	_ = env.Client.Update(context.Background(), obj)
}
