package chart_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/apply"
	sourcerender "gitsync.dev/gitsync/source/render"
)

// TestMultiTenantValues installs the multi-tenant example in the order its
// README gives — the tenant Namespace, then the chart with the example's
// values (which grants the agent rights in that namespace), then the
// platform layer — each step on its own, then does what the agent does for
// team-a's GitSync: authenticated as the agent's own ServiceAccount, it
// impersonates the tenant's ServiceAccount for writes and reads live state
// with its own identity (its watch caches).
func TestMultiTenantValues(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	render := func(path string) []*unstructured.Unstructured {
		t.Helper()
		r, err := sourcerender.Render(ctx, root, path, sourcerender.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		return r.Objects
	}
	// The README's steps: kubectl apply -f platform/namespace.yaml; helm
	// install -f agent-values.yaml; kubectl apply -f platform/.
	var namespace []*unstructured.Unstructured
	for _, o := range render("examples/multi-tenant/platform") {
		if o.GetKind() == "Namespace" {
			namespace = append(namespace, o)
		}
	}
	if len(namespace) != 1 || namespace[0].GetName() != "team-a" {
		t.Fatalf("platform/ should hold exactly the team-a Namespace, has %d Namespaces", len(namespace))
	}
	install(t, namespace)
	install(t, template(t, "mt", ns, "-f", multiTenantValues))
	install(t, render("examples/multi-tenant/platform"))

	agentSA := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mt-gitsync"}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	if err := env.Client.SubResource("token").Create(ctx, agentSA, tr); err != nil {
		t.Fatalf("token for the agent's ServiceAccount: %v", err)
	}
	agent := rest.AnonymousClientConfig(env.Config)
	agent.BearerToken = tr.Status.Token
	agentReader, err := client.New(agent, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	asTenant := rest.CopyConfig(agent)
	asTenant.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:team-a:gitsync-tenant"}

	team, err := sourcerender.Render(ctx, root, "examples/multi-tenant/team-a", sourcerender.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	applyAs := func(cfg *rest.Config, namespace string) *apply.ChangeSet {
		t.Helper()
		opts := apply.DefaultOptions()
		opts.DefaultNamespace = namespace
		a, err := apply.New(cfg, agentReader, opts)
		if err != nil {
			t.Fatal(err)
		}
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cs, err := a.Apply(actx, team.Objects)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}

	if cs := applyAs(asTenant, "team-a"); cs.Err() != nil {
		t.Fatalf("agent impersonating team-a's ServiceAccount: %v", cs.Err())
	}
	// Without impersonation the agent may read, not write.
	for _, e := range applyAs(agent, env.Namespace(t)).Entries {
		if e.Action != apply.Failed || !forbiddenErr(e.Err) {
			t.Errorf("agent as itself: %s %s (%v), want failed: forbidden", e.Subject, e.Action, e.Err)
		}
	}
	sa := "system:serviceaccount:" + ns + ":mt-gitsync"
	for _, tc := range []struct {
		a    authz
		want bool
	}{
		{authz{verb: "watch", group: "apps", resource: "deployments"}, true},
		{authz{verb: "impersonate", resource: "serviceaccounts", namespace: "team-a"}, true},
		{authz{verb: "get", resource: "secrets", namespace: "team-a"}, true},
		{authz{verb: "list", resource: "secrets"}, false},
		{authz{verb: "impersonate", resource: "serviceaccounts", namespace: "kube-system"}, false},
		{authz{verb: "patch", group: "apps", resource: "deployments", namespace: "team-a"}, false},
	} {
		if got := allowed(t, sa, tc.a); got != tc.want {
			t.Errorf("%s may %s: %v, want %v", sa, tc.a, got, tc.want)
		}
	}
}
