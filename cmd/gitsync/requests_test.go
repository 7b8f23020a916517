package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/internal/testenv"
)

// cliRequestObjects is how many ConfigMaps TestCLIRequestCounts applies
// (bench/RESULTS.md records the figures of this test).
const cliRequestObjects = 1000

// TestCLIRequestCounts: a cold CLI reads live state with one LIST per
// (kind, namespace), not one GET per object. Counted at the apiserver (every
// request through a counting proxy, discovery included): a first apply of
// N ConfigMaps needs at most N+10 requests, an unchanged re-apply and a diff
// of it at most 10.
func TestCLIRequestCounts(t *testing.T) {
	ns := env.Namespace(t)
	proxy := env.NewFaultProxy(t)
	dir := t.TempDir()
	files := map[string]string{}
	var all strings.Builder
	for i := range cliRequestObjects {
		fmt.Fprintf(&all, "---\n%s", configMap(fmt.Sprintf("cm-%04d", i), "k", "v"))
	}
	files["all.yaml"] = all.String()
	writeFiles(t, dir, files)

	count := func(args ...string) int {
		t.Helper()
		rule := proxy.MustInject(t, testenv.Fault{})
		defer rule.Clear()
		r := gitsync(t, append(args, "--kubeconfig", proxy.Kubeconfig, "-n", ns)...)
		if r.code != 0 {
			t.Fatalf("gitsync %s: %s", strings.Join(args, " "), r)
		}
		n := rule.Matched()
		t.Logf("gitsync %s of %d ConfigMaps: %d requests", args[0], cliRequestObjects, n)
		return n
	}
	if n := count("apply", dir); n > cliRequestObjects+10 {
		t.Errorf("first apply: %d requests, want at most %d", n, cliRequestObjects+10)
	}
	if n := count("apply", dir); n > 10 {
		t.Errorf("unchanged re-apply: %d requests, want at most 10", n)
	}
	if n := count("diff", dir); n > 10 {
		t.Errorf("diff of an unchanged directory: %d requests, want at most 10", n)
	}
}

// TestCLIListForbiddenFallsBack: an identity that may get but not list a
// kind still reads its objects (one GET each), so an unchanged re-apply
// stays unchanged instead of seeing nothing live.
func TestCLIListForbiddenFallsBack(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	ctx := context.Background()
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "getter"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "getter"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "patch"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "getter"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "getter"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "getter"}}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.yaml": configMap("a", "k", "v"), "b.yaml": configMap("b", "k", "v"), "c.yaml": configMap("c", "k", "v")})
	as := "system:serviceaccount:" + ns + ":getter"
	wantCode(t, gitsyncIn(t, ns, "apply", dir, "--as", as), 0)
	r := gitsyncIn(t, ns, "apply", dir, "--as", as)
	wantCode(t, r, 0)
	if got := lines(r.stdout, "ConfigMap/"); len(got) != 3 || !strings.Contains(strings.Join(got, "\n"), "unchanged") || strings.Contains(strings.Join(got, "\n"), "created") {
		t.Errorf("re-apply without list rights: want 3 unchanged, got:\n%s", r)
	}
}
