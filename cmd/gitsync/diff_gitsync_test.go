package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/object"
)

// previewFixture is a GitSync "web" in ns that applies to target as the
// ServiceAccount deployer (allowed ConfigMaps in target only), with two live
// objects in its status inventory: "changed" (still in Git, with a new value)
// and "stale" (gone from Git, carrying web's owner labels).
type previewFixture struct {
	c          client.Client
	ns, target string
	repo       string // a Git repository whose branch main holds app/
}

func newPreviewFixture(t *testing.T) *previewFixture {
	t.Helper()
	ctx := context.Background()
	f := &previewFixture{c: statusClient(t), ns: env.Namespace(t), target: env.Namespace(t)}
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "deployer"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: f.target, Name: "deployer"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: f.target, Name: "deployer"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "deployer"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: f.ns, Name: "deployer"}}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	// The agent applied "changed" and "stale" earlier: field manager
	// gitsync, web's owner labels (kept by an apply without --name).
	applied := t.TempDir()
	labels := "  labels:\n    " + gitsyncv1.LabelName + ": web\n    " + gitsyncv1.LabelNamespace + ": " + f.ns + "\n"
	writeFiles(t, applied, map[string]string{
		"changed.yaml": strings.Replace(configMap("changed", "k", "v1"), "metadata:\n", "metadata:\n"+labels, 1),
		"stale.yaml":   strings.Replace(configMap("stale", "k", "v"), "metadata:\n", "metadata:\n"+labels, 1),
	})
	wantCode(t, gitsyncIn(t, f.target, "apply", applied), 0)
	var entries []gitsyncv1.InventoryEntry
	for _, name := range []string{"changed", "stale"} {
		live := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: f.target, Name: name}, live); err != nil {
			t.Fatal(err)
		}
		id := object.ID{Kind: "ConfigMap", Namespace: f.target, Name: name}
		entries = append(entries, gitsyncv1.InventoryEntry{ID: id.Key(), Version: "v1", UID: live.UID})
	}
	f.repo = t.TempDir()
	gittest.NewRepo(t, f.repo).Commit("app", map[string]string{
		"app/changed.yaml": configMap("changed", "k", "v2"),
		"app/new.yaml":     configMap("new", "k", "v"),
	})
	gs := &gitsyncv1.GitSync{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "web"},
		Spec: gitsyncv1.GitSyncSpec{
			Source:             gitsyncv1.GitSource{URL: "file://" + f.repo, Ref: gitsyncv1.GitRef{Branch: "main"}, Path: "app"},
			Prune:              true,
			TargetNamespace:    f.target,
			ServiceAccountName: "deployer",
		},
	}
	if err := f.c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	gs.Status = gitsyncv1.GitSyncStatus{Inventory: &gitsyncv1.Inventory{Entries: entries}}
	if err := f.c.Status().Update(ctx, gs); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestDiffGitSyncPreviewsTheAgent: `diff --gitsync NS/NAME DIR` renders the
// GitSync's path of DIR into its targetNamespace, diffs it as its
// ServiceAccount and previews the prunes of its status inventory, writing
// nothing; without DIR it fetches the GitSync's source at its spec.
func TestDiffGitSyncPreviewsTheAgent(t *testing.T) {
	t.Parallel()
	f := newPreviewFixture(t)
	ref := f.ns + "/web"
	want := []string{
		"+ ConfigMap/" + f.target + "/new (create)",
		"~ ConfigMap/" + f.target + "/changed (configure)",
		"- ConfigMap/" + f.target + "/stale (prune)",
	}
	for name, args := range map[string][]string{
		"checkout":      {"diff", "--gitsync", ref, f.repo},
		"spec's source": {"diff", "--gitsync", ref},
	} {
		t.Run(name, func(t *testing.T) {
			r := gitsync(t, append(args, "--kubeconfig", env.Kubeconfig)...)
			wantCode(t, r, 1)
			if d := cmp.Diff(want, changeLines(r.stdout)); d != "" {
				t.Errorf("changes (-want +got):\n%s\n%s", d, r)
			}
		})
	}
	// Nothing was written.
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.target, Name: "new"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap new: want not found after a preview, got %v", err)
	}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.target, Name: "stale"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("ConfigMap stale: want kept after a preview, got %v", err)
	}
}

// TestDiffGitSyncBranch: a CI job previews a pull request's branch with the
// GitSync's spec otherwise: --branch overrides spec.source.ref only.
func TestDiffGitSyncBranch(t *testing.T) {
	t.Parallel()
	f := newPreviewFixture(t)
	repo := gittest.OpenRepo(t, f.repo)
	repo.Branch("feature")
	repo.Commit("feature", map[string]string{"app/changed.yaml": configMap("changed", "k", "v1"), "app/new.yaml": ""})
	r := gitsync(t, "diff", "--gitsync", f.ns+"/web", "--branch", "feature", "--kubeconfig", env.Kubeconfig, "-o", "json")
	wantCode(t, r, 1)
	for _, want := range []string{`"subject": "ConfigMap/` + f.target + `/stale"`, `"action": "prune"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("want %s in:\n%s", want, r)
		}
	}
	if strings.Contains(r.stdout, "/new") || strings.Contains(r.stdout, `"configure"`) {
		t.Errorf("branch feature has no new object and changed is unchanged there, got:\n%s", r)
	}
}

// TestDiffGitSyncImpersonates: the preview runs as the GitSync's
// ServiceAccount, so an object it may not write fails the preview as it
// would fail the agent (the kubeconfig's administrator could write it), and
// the failure names the identity.
func TestDiffGitSyncImpersonates(t *testing.T) {
	t.Parallel()
	f := newPreviewFixture(t)
	writeFiles(t, f.repo, map[string]string{"app/elsewhere.yaml": strings.Replace(configMap("elsewhere", "k", "v"), "metadata:\n", "metadata:\n  namespace: "+f.ns+"\n", 1)})
	r := gitsync(t, "diff", "--gitsync", f.ns+"/web", f.repo, "--kubeconfig", env.Kubeconfig)
	wantCode(t, r, 2)
	sa := serviceAccountUser(f.ns, "deployer")
	if !slices.ContainsFunc(strings.Split(r.stdout+r.stderr, "\n"), func(l string) bool {
		return strings.Contains(l, "ConfigMap/"+f.ns+"/elsewhere") && strings.Contains(l, "forbidden") && strings.Contains(l, sa)
	}) {
		t.Errorf("want ConfigMap/%s/elsewhere refused for %s, got:\n%s", f.ns, sa, r)
	}
	// A GitSync that does not exist is a clear error.
	r = gitsync(t, "diff", "--gitsync", f.ns+"/nope", f.repo, "--kubeconfig", env.Kubeconfig)
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "GitSync/"+f.ns+"/nope not found") {
		t.Errorf("want a not-found error, got:\n%s", r)
	}
}

// TestDiffGitSyncReadsSecretAsTheAgent: without DIR, the preview fetches with
// the GitSync's source Secret read under the agent's key names, so a Secret
// with keys the agent does not know fails the preview as it stalls the agent
// (naming the keys it has), and one with the agent's keys works. No value
// is printed.
func TestDiffGitSyncReadsSecretAsTheAgent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := env.Namespace(t)
	const password = "s3cret-never-printed"
	server := serveAppRepo(t, "alice", password)
	c := statusClient(t)
	for name, data := range map[string]map[string][]byte{
		"unknown-keys": {"user": []byte("alice"), "pass": []byte(password)},
		"agent-keys":   {"username": []byte("alice"), "password": []byte(password)},
	} {
		if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}); err != nil {
			t.Fatal(err)
		}
		gs := &gitsyncv1.GitSync{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: gitsyncv1.GitSyncSpec{Source: gitsyncv1.GitSource{URL: server + "/app.git", Ref: gitsyncv1.GitRef{Branch: "main"},
				SecretRef: &gitsyncv1.LocalObjectReference{Name: name}}},
		}
		if err := c.Create(ctx, gs); err != nil {
			t.Fatal(err)
		}
	}
	r := gitsync(t, "diff", "--gitsync", ns+"/unknown-keys", "--kubeconfig", env.Kubeconfig)
	wantCode(t, r, 2)
	if !strings.Contains(r.stdout+r.stderr, "its keys are pass, user") {
		t.Errorf("want the Secret's key names in:\n%s", r)
	}
	r = gitsync(t, "diff", "--gitsync", ns+"/agent-keys", "--kubeconfig", env.Kubeconfig)
	wantCode(t, r, 1)
	if d := cmp.Diff([]string{"+ ConfigMap/" + ns + "/a (create)"}, changeLines(r.stdout)); d != "" {
		t.Errorf("changes (-want +got):\n%s\n%s", d, r)
	}
	if strings.Contains(r.stdout+r.stderr, password) {
		t.Errorf("output leaks the password:\n%s", r)
	}
}

// TestDiffGitSyncGitHubApp: a GitSync whose source Secret holds a GitHub
// App previews like the agent syncs it: the CLI mints the installation
// token (the stand-in API checks the app's JWT and looks the installation
// up for team/app) and fetches with it from a server that takes nothing
// else. Neither the key nor the token is printed.
//
// Checked: with secretAuth not minting, the preview fails (exit 2, the
// server refuses the Secret's credentials).
func TestDiffGitSyncGitHubApp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := env.Namespace(t)
	root := t.TempDir()
	gittest.NewRepo(t, filepath.Join(root, "team", "app.git")).Commit("a", map[string]string{"a.yaml": configMap("a", "k", "v")})
	srv := gittest.New(t, root, gittest.Options{User: "x-access-token", Password: "none minted yet"})
	gh := gittest.NewGitHubApp(t, gittest.GitHubAppOptions{Repos: []string{"team/app"}, OnToken: srv.SetPassword})
	if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Data: gh.Secret(false)}); err != nil {
		t.Fatal(err)
	}
	gs := &gitsyncv1.GitSync{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: gitsyncv1.GitSyncSpec{Source: gitsyncv1.GitSource{URL: srv.URL + "/team/app.git", Ref: gitsyncv1.GitRef{Branch: "main"},
			SecretRef: &gitsyncv1.LocalObjectReference{Name: "app"}}},
	}
	if err := statusClient(t).Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	r := gitsync(t, "diff", "--gitsync", ns+"/app", "--kubeconfig", env.Kubeconfig)
	wantCode(t, r, 1)
	if d := cmp.Diff([]string{"+ ConfigMap/" + ns + "/a (create)"}, changeLines(r.stdout)); d != "" {
		t.Errorf("changes (-want +got):\n%s\n%s", d, r)
	}
	if gh.Mints() != 1 || strings.Contains(r.stdout+r.stderr, gh.Token()) || strings.Contains(r.stdout+r.stderr, strings.Split(string(gh.KeyPEM), "\n")[1]) {
		t.Errorf("minted %d tokens; output:\n%s", gh.Mints(), r)
	}
}
