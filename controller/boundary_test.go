package controller_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// grantGet lets the tenant ServiceAccount get the Secrets names (a Role
// with resourceNames, as an admin grants a tenant one Secret) and returns
// the RoleBinding.
func grantGet(t *testing.T, c client.Client, ns string, names ...string) *rbacv1.RoleBinding {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "tenant-reads", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: names, Verbs: []string{"get"}},
	}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant-reads", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "tenant", Namespace: ns}}}
	for _, o := range []client.Object{role, rb} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return rb
}

// TestCommitStatusTokenReadAsAccount is the attack: a tenant names, in
// spec.commitStatus.secretRef, a Secret its ServiceAccount may not get,
// hoping the agent sends that token to the Git host the tenant chose. No
// request reaches the host; the post fails visibly (an Event). Once the
// account may get the Secret, the status is posted with its token.
//
// Checked: with postCommit reading the Secret with the agent's API reader
// (as before), the stand-in receives the token at once.
func TestCommitStatusTokenReadAsAccount(t *testing.T) {
	host := newGiteaStandIn(t, nil)
	c, ns, r, _ := commitStatusCase(t, agentOptions{})
	tenant(t, c, ns)
	r.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
	gs := newGitSync(ns, "app", r.url(), withCommitStatus(host.URL), func(g *v1.GitSync) { g.Spec.ServiceAccountName = "tenant" })
	ctx := context.Background()
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	eventually(t, "CommitStatusFailed event", func(ctx context.Context) (bool, error) {
		evs := &corev1.EventList{}
		if err := c.List(ctx, evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
			return e.Reason == "CommitStatusFailed" && strings.Contains(e.Message, "secrets/host-token")
		}), nil
	})
	if got := host.got(); len(got) != 0 {
		t.Fatalf("the host received %d posts (first with Authorization %q) for a token the account may not read", len(got), got[0].auth)
	}

	grantGet(t, c, ns, "host-token")
	request(t, c, key, "1")
	posts := host.waitPosts(t, 1)
	if posts[0].auth != "token "+hostToken {
		t.Errorf("Authorization = %q, want the token once the account may read it", posts[0].auth)
	}
}

// TestSourceCredentialsReadAsAccount: spec.source.secretRef is read like
// everything a GitSync names: an account that may not get it is Forbidden
// naming the Secret, and the remote is never asked with its credentials.
//
// Checked: with sourceAuth reading past the boundary (the view's check
// skipped), the GitSync fetches with the credentials and turns Ready.
func TestSourceCredentialsReadAsAccount(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	tenant(t, c, ns)
	r := newRepo(t)
	h := newGitHost(t, r, "s3cret")
	createAuthSecret(t, c, ns, "s3cret")
	r.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
	gs := newGitSync(ns, "app", h.url, func(g *v1.GitSync) {
		g.Spec.Source.SecretRef = &v1.LocalObjectReference{Name: "git-auth"}
		g.Spec.ServiceAccountName = "tenant"
	})
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitReason(t, c, key, v1.ReasonForbidden, "secrets/git-auth", "spec.source.secretRef", "tenant")
	if n := h.ListRefs.Load(); n != 0 {
		t.Errorf("the remote was asked %d times although its credentials may not be read", n)
	}
	grantGet(t, c, ns, "git-auth")
	request(t, c, key, "1")
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
}

// TestRevokedRightNotUsed is the attack: the account may get a Secret
// named in spec.substituteFrom, and its value is substituted; then the
// right is revoked (`kubectl auth can-i` says no) and the Secret changes.
// The new value never reaches the ConfigMap: the GitSync is Forbidden and
// the ConfigMap keeps the old value.
//
// Checked: with tenant answers kept forever (access.check asking only the
// first time), the ConfigMap takes the new value.
func TestRevokedRightNotUsed(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	tenant(t, c, ns)
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-vars", Namespace: ns}, StringData: map[string]string{"TEAM": "value-before"}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	rb := grantGet(t, c, ns, "team-vars")
	r := newRepo(t)
	r.commit(map[string]string{"deploy/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team\ndata:\n  value: ${TEAM}\n"})
	gs := newGitSync(ns, "app", r.url(), func(g *v1.GitSync) {
		g.Spec.ServiceAccountName = "tenant"
		g.Spec.SubstituteFrom = []v1.SubstituteReference{{Kind: "Secret", Name: "team-vars"}}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitData(t, c, ns, "team", map[string]string{"value": "value-before"})

	if err := c.Delete(ctx, rb); err != nil {
		t.Fatal(err)
	}
	secret.StringData = map[string]string{"TEAM": "value-after"}
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	waitReason(t, c, key, v1.ReasonForbidden, "secrets/team-vars", "tenant")
	if cm, err := getCM(t, c, ns, "team"); err != nil || cm.Data["value"] != "value-before" {
		t.Fatalf("ConfigMap team = %v, %v: want the value from before the right was revoked", cm, err)
	}
}

// TestDefaultServiceAccount: with the operator's --default-service-account,
// a GitSync that names no account is read and written as that account in
// its namespace, not as the agent: a Secret it names but the account may
// not get is Forbidden (naming the account and the flag), and so is an
// object the account may not create. What the account may do is applied.
//
// Checked: with Options.DefaultServiceAccount not set by the agent, the
// GitSync reads and writes with the agent's rights and is never Forbidden.
func TestDefaultServiceAccount(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns, defaultServiceAccount: "tenant"})
	tenant(t, c, ns)
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-vars", Namespace: ns}, StringData: map[string]string{"TEAM": "blue"}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	r := newRepo(t)
	r.commit(map[string]string{"deploy/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team\ndata:\n  value: ${TEAM}\n"})
	gs := newGitSync(ns, "app", r.url(), func(g *v1.GitSync) {
		g.Spec.SubstituteFrom = []v1.SubstituteReference{{Kind: "Secret", Name: "team-vars"}}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitReason(t, c, key, v1.ReasonForbidden, "secrets/team-vars", "tenant", "--default-service-account")

	grantGet(t, c, ns, "team-vars")
	request(t, c, key, "1")
	waitData(t, c, ns, "team", map[string]string{"value": "blue"})

	r.commit(map[string]string{"deploy/rb.yaml": roleBinding("viewers")})
	request(t, c, key, "2")
	waitReason(t, c, key, v1.ReasonForbidden, "rolebindings", "tenant", "--default-service-account")
	rb := &rbacv1.RoleBinding{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "viewers"}, rb); err == nil {
		t.Errorf("RoleBinding viewers was applied although the default account may not create it")
	}
}

// TestForbiddenRecheckedSoon: a GitSync Stalled Forbidden (its account may
// not patch Secrets) is asked again within half a minute, not only at its
// interval (an hour here): once a Role grants the right, with no new
// commit, request or spec change, it applies.
//
// Checked: with Forbidden requeued at the interval like other stalls, it
// stays Forbidden past waitCondition's minute.
func TestForbiddenRecheckedSoon(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	tenant(t, c, ns)
	r := newRepo(t)
	r.commit(map[string]string{
		"deploy/cm.yaml":     configMap("a", "1"),
		"deploy/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  k: v\n",
	})
	gs := newGitSync(ns, "app", r.url(), func(g *v1.GitSync) {
		g.Spec.ServiceAccountName = "tenant"
		g.Spec.Interval = metav1.Duration{Duration: time.Hour}
	})
	ctx := context.Background()
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitReason(t, c, key, v1.ReasonForbidden, "patch secrets", "tenant")

	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "tenant-secrets", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"*"}},
	}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant-secrets", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "tenant", Namespace: ns}}}
	for _, o := range []client.Object{role, rb} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
}
