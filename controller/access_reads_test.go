package controller_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// TestSubstituteFromCannotReadPastTheAccount is the attack: a tenant whose
// ServiceAccount may manage ConfigMaps but may not read the Secret
// "admin-token" names that Secret in spec.substituteFrom, hoping the agent
// copies its value into a ConfigMap the tenant can read. The GitSync is
// Forbidden naming the Secret and the account, and nothing is applied. A
// Secret the account may get (a resourceNames grant) is substituted.
//
// Checked: without the read check the ConfigMap "leak" is created holding
// the admin token.
func TestSubstituteFromCannotReadPastTheAccount(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	tenant(t, c, ns) // its account may use ConfigMaps only
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "admin-token", Namespace: ns}, StringData: map[string]string{"TOKEN": "admin-only-value-1234"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-vars", Namespace: ns}, StringData: map[string]string{"TEAM": "blue-team"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "team-vars", Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"team-vars"}, Verbs: []string{"get"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "team-vars", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "team-vars"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "tenant", Namespace: ns}}},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	r := newRepo(t)
	r.commit(map[string]string{
		"leak/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\ndata:\n  value: ${TOKEN}\n",
		"team/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team\ndata:\n  value: ${TEAM}\n",
	})
	from := func(secret, path string) func(*v1.GitSync) {
		return func(g *v1.GitSync) {
			g.Spec.ServiceAccountName = "tenant"
			g.Spec.Source.Path = path
			g.Spec.SubstituteFrom = []v1.SubstituteReference{{Kind: "Secret", Name: secret}}
		}
	}
	leak := newGitSync(ns, "leak", r.url(), from("admin-token", "leak"))
	team := newGitSync(ns, "team", r.url(), from("team-vars", "team"))
	for _, gs := range []*v1.GitSync{leak, team} {
		if err := c.Create(ctx, gs); err != nil {
			t.Fatal(err)
		}
	}

	g := waitReason(t, c, client.ObjectKeyFromObject(leak), v1.ReasonForbidden, "secrets/admin-token", "tenant")
	for _, cond := range g.Status.Conditions {
		if strings.Contains(cond.Message, "admin-only-value-1234") {
			t.Errorf("the Secret's value is in condition %s: %s", cond.Type, cond.Message)
		}
	}
	if _, err := getCM(t, c, ns, "leak"); !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap leak applied from a Secret the account may not read: %v", err)
	}
	waitCondition(t, c, client.ObjectKeyFromObject(team), v1.ConditionReady, metav1.ConditionTrue, nil)
	cm, err := getCM(t, c, ns, "team")
	if err != nil || cm.Data["value"] != "blue-team" {
		t.Fatalf("ConfigMap team = %v, %v; want the value of the Secret the account may get", cm, err)
	}
}
