package controller_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/chartrepotest"
)

// chartRepos serves web 1.2.0 and 1.2.3 over HTTP and cache 0.5.1 from a
// registry, packaged and pushed by the real helm.
func chartRepos(t *testing.T) (*chartrepotest.HTTPRepo, *chartrepotest.Registry) {
	t.Helper()
	web, reg := chartrepotest.NewHTTPRepo(t), chartrepotest.NewRegistry(t)
	for _, v := range []string{"1.2.0", "1.2.3"} {
		dir := t.TempDir()
		chartrepotest.WriteTree(t, dir, chartrepotest.Leaf("web", v))
		web.Add(t, dir)
	}
	dir := t.TempDir()
	chartrepotest.WriteTree(t, dir, chartrepotest.Leaf("cache", "0.5.1"))
	reg.Push(t, dir)
	return web, reg
}

// lockedChart is the umbrella chart under deploy/ with the Chart.lock
// helm makes for it, as a user commits it (no charts/), and what `helm
// dependency build && helm template` renders from it for release and ns.
func lockedChart(t *testing.T, web *chartrepotest.HTTPRepo, reg *chartrepotest.Registry, release, ns string) (map[string]string, []map[string]any) {
	t.Helper()
	files := chartrepotest.Umbrella(web.URL(), reg.URL())
	home, dir := t.TempDir(), t.TempDir()
	chartrepotest.WriteTree(t, dir, files)
	chartrepotest.RunHelm(t, home, dir, "dependency", "update", ".", "--plain-http")
	lock, err := os.ReadFile(filepath.Join(dir, "Chart.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "charts")); err != nil {
		t.Fatal(err)
	}
	chartrepotest.RunHelm(t, home, dir, "repo", "add", "webrepo", web.URL())
	chartrepotest.RunHelm(t, home, dir, "dependency", "build", ".", "--plain-http")
	out := chartrepotest.RunHelm(t, home, dir, "template", release, ".", "--namespace", ns)
	var want []map[string]any
	for _, doc := range strings.Split(out, "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		if m != nil {
			want = append(want, m)
		}
	}
	repoFiles := map[string]string{"deploy/Chart.lock": string(lock)}
	for k, v := range files {
		repoFiles["deploy/"+k] = v
	}
	return repoFiles, want
}

// TestChartDependencies: a GitSync of an umbrella chart whose dependencies
// come from a Helm repository and an OCI registry (locked, nothing
// vendored) applies what `helm dependency build && helm template` renders,
// is in sync, and resyncs with 0 writes and no request to either
// repository. A commit whose Chart.yaml no longer matches its lock is
// Stalled naming Chart.lock, and nothing is applied or pruned.
//
// Checked: without the revision cache's dependency resolver (agent.go's
// copts.Dependencies) the GitSync stalls "not in charts/".
func TestChartDependencies(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	a := startAgent(t, agentOptions{namespace: ns})
	web, reg := chartRepos(t)
	files, want := lockedChart(t, web, reg, "platform", ns)
	r := newRepo(t)
	r.commit(files)
	gs := newGitSync(ns, "platform", r.url(), func(g *v1.GitSync) {
		g.Spec.Interval = metav1.Duration{Duration: time.Hour}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	got := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	if n := len(got.Status.Inventory.Entries); n != len(want) || n != 3 {
		t.Errorf("inventory has %d entries, helm template renders %d (want 3): %+v", n, len(want), got.Status.Inventory.Entries)
	}
	for _, w := range want {
		md := w["metadata"].(map[string]any)
		cm, err := getCM(t, c, ns, md["name"].(string))
		if err != nil {
			t.Errorf("%s not applied: %v", md["name"], err)
			continue
		}
		if w["data"] != nil {
			for k, v := range w["data"].(map[string]any) {
				if cm.Data[k] != v {
					t.Errorf("%s data.%s = %q, helm renders %q", cm.Name, k, cm.Data[k], v)
				}
			}
		}
		if l, ok := md["labels"].(map[string]any); ok && cm.Labels["chart"] != l["chart"] {
			t.Errorf("%s label chart = %q, helm renders %q", cm.Name, cm.Labels["chart"], l["chart"])
		}
	}
	a.settle(t, c, key, 1)

	repoRequests := web.Requests() + reg.Requests()
	done, mark := a.reconciles(t, "success"), len(a.count.all.Requests())
	poke(t, c, key, "resync")
	eventually(t, "resync reconcile", func(context.Context) (bool, error) { return a.reconciles(t, "success") > done, nil })
	if writes := objectWrites(a.count.all.Requests()[mark:]); len(writes) != 0 {
		t.Errorf("resync: %d writes, want 0: %v", len(writes), writes)
	}
	if n := web.Requests() + reg.Requests() - repoRequests; n != 0 {
		t.Errorf("resync sent %d requests to the chart repositories, want 0", n)
	}

	applied := got.Status.LastAppliedRevision
	changed := strings.Replace(files["deploy/Chart.yaml"], "version: ~1.2.0", "version: ~1.3.0", 1)
	r.commit(map[string]string{"deploy/Chart.yaml": changed})
	request(t, c, key, "lock-mismatch")
	got = waitCondition(t, c, key, v1.ConditionStalled, metav1.ConditionTrue, nil)
	cond := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionStalled)
	if cond.Reason != v1.ReasonRenderFailed || !strings.Contains(cond.Message, "deploy/Chart.lock") || !strings.Contains(cond.Message, "does not match") {
		t.Errorf("Stalled = %s: %s, want RenderFailed naming deploy/Chart.lock", cond.Reason, cond.Message)
	}
	if got.Status.LastAppliedRevision != applied || len(got.Status.Inventory.Entries) != 3 {
		t.Errorf("after the refused lock: applied %s (was %s), %d inventory entries", got.Status.LastAppliedRevision, applied, len(got.Status.Inventory.Entries))
	}
	if _, err := getCM(t, c, ns, "platform-web"); err != nil {
		t.Errorf("platform-web gone after a refused lock: %v", err)
	}
}

// TestChartDependencyCredentials: a chart whose repositories ask for
// credentials, with none configured, is not Ready (AuthenticationRequired,
// naming the repository and the field to set) and applies nothing; once
// spec.helm.repositories names Secrets with them, it applies. The password
// never appears in the status.
//
// Checked by dropping the credentials getCapped puts in the settings: the
// GitSync then stays AuthenticationRequired after the Secrets are named.
func TestChartDependencyCredentials(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	startAgent(t, agentOptions{namespace: ns})
	web, reg := chartRepos(t)
	files, _ := lockedChart(t, web, reg, "platform", ns)
	web.RequireAuth("robot", "web-s3cret")
	reg.RequireAuth("robot", "oci-s3cret")
	r := newRepo(t)
	r.commit(files)
	gs := newGitSync(ns, "platform", r.url())
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	got := waitReason(t, c, key, v1.ReasonAuthenticationRequired, "none are configured", "spec.helm.repositories")
	if got.Status.Inventory != nil || got.Status.LastAppliedRevision != "" {
		t.Errorf("without credentials: applied %q, inventory %+v", got.Status.LastAppliedRevision, got.Status.Inventory)
	}
	list := &corev1.ConfigMapList{}
	if err := c.List(ctx, list, client.InNamespace(ns), client.HasLabels{"gitsync.dev/name"}); err != nil || len(list.Items) != 0 {
		t.Errorf("without credentials %d ConfigMaps applied (%v)", len(list.Items), err)
	}
	for name, pw := range map[string]string{"web-creds": "web-s3cret", "oci-creds": "oci-s3cret"} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			StringData: map[string]string{"username": "robot", "password": pw}}
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Get(ctx, key, gs); err != nil {
		t.Fatal(err)
	}
	gs.Spec.Helm = &v1.HelmSpec{Repositories: []v1.HelmRepository{
		{URL: web.URL(), SecretRef: &v1.LocalObjectReference{Name: "web-creds"}},
		{URL: reg.URL(), SecretRef: &v1.LocalObjectReference{Name: "oci-creds"}},
	}}
	if err := c.Update(ctx, gs); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	if n := len(got.Status.Inventory.Entries); n != 3 {
		t.Errorf("with credentials: %d inventory entries, want 3", n)
	}
	for _, cond := range got.Status.Conditions {
		if strings.Contains(cond.Message, "s3cret") {
			t.Errorf("condition %s shows a password: %s", cond.Type, cond.Message)
		}
	}
}

// TestChartDependencyAlias: a chart whose Chart.yaml names a dependency's
// repository by alias ("@webrepo", as after `helm repo add webrepo URL`)
// is Stalled InvalidSpec naming the alias while nothing names it, and
// applies the dependency from the URL spec.helm.repositories gives the
// name (no Secret: a public repository).
//
// Checked: with Fetcher.Resolve not mapping aliases, the alias fails as a
// URL ("not an http(s) or oci URL") and the test fails at its first wait.
func TestChartDependencyAlias(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	startAgent(t, agentOptions{namespace: ns})
	web, reg := chartRepos(t)
	files := map[string]string{}
	// Quoted: "@" cannot start a plain YAML scalar.
	for p, body := range chartrepotest.Umbrella(`"@webrepo"`, reg.URL()) {
		files["deploy/"+p] = body
	}
	r := newRepo(t)
	r.commit(files)
	gs := newGitSync(ns, "platform", r.url())
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitReason(t, c, key, v1.ReasonInvalidSpec, "@webrepo", "spec.helm.repositories[].name")
	if err := c.Get(ctx, key, gs); err != nil {
		t.Fatal(err)
	}
	gs.Spec.Helm = &v1.HelmSpec{Repositories: []v1.HelmRepository{{Name: "webrepo", URL: web.URL()}}}
	if err := c.Update(ctx, gs); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	cm, err := getCM(t, c, ns, "platform-web")
	if err != nil || cm.Labels["chart"] != "web-1.2.3" {
		t.Errorf("ConfigMap platform-web: %v %v; want chart web-1.2.3 from the named repository", cm.Labels, err)
	}
}
