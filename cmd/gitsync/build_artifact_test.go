package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/chartrepotest"
	"gitsync.dev/gitsync/internal/gitsynctest"
	"gitsync.dev/gitsync/internal/ocitest"
)

// TestBuildGitSyncOfArtifact: the agent binary (`gitsync run` with
// loopback allowed) applies a GitSync whose source is an oci:// artifact
// in a registry that wants credentials, read from the GitSync's Secret;
// `gitsync build --gitsync` reads the same artifact with that Secret (as
// the user) and prints what the agent applied, the Secret's password
// nowhere in its output; with spec.source.verify set to a key that never
// signed it, build refuses the artifact as the agent would.
//
// Checked: with renderRemote not branching on oci:// URLs, build tries
// the URL as a Git remote and exits 2.
func TestBuildGitSyncOfArtifact(t *testing.T) {
	ns := env.Namespace(t)
	startRun(t, ns, "--leader-elect=false", "--allow-networks", "127.0.0.0/8")
	c := gitsyncClient(t)
	reg := chartrepotest.NewRegistry(t)
	reg.RequireAuth("ci", "registry-pw-4f2a")
	url := "oci://" + reg.Host() + "/apps/web"
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"deploy/cm.yaml": configMap("web", "k", "from-artifact"),
		"other/cm.yaml":  configMap("elsewhere", "k", "v"),
	})
	creds := []string{ociEnvUsername + "=ci", ociEnvPassword + "=registry-pw-4f2a"}
	push := gitsyncEnv(t, creds, "push", "artifact", dir, url+":v1", "--plain-http")
	wantCode(t, push, 0)
	_, digest, _ := strings.Cut(strings.TrimSpace(push.stdout), "@")

	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry", Namespace: ns},
		StringData: map[string]string{"username": "ci", "password": "registry-pw-4f2a"}}); err != nil {
		t.Fatal(err)
	}
	gs := gitsynctest.New(ns, "web", url, func(g *gitsyncv1.GitSync) {
		g.Spec.Source.Ref = gitsyncv1.GitRef{Tag: "v1"}
		g.Spec.Source.SecretRef = &gitsyncv1.LocalObjectReference{Name: "registry"}
	})
	poll(t, "create GitSync (CRD installed by the agent)", func(ctx context.Context) (bool, error) {
		return c.Create(ctx, gs.DeepCopy()) == nil, nil
	})
	waitApplied(t, c, client.ObjectKeyFromObject(gs), "v1@"+digest)

	r := gitsync(t, "build", "--gitsync", ns+"/web", "--kubeconfig", env.Kubeconfig, "-o", "json", "--plain-http")
	wantCode(t, r, 0)
	built := builtObjects(t, r.stdout, outputJSON)
	if len(built) != 1 || built[0].GetName() != "web" {
		t.Fatalf("build --gitsync printed %d objects, want ConfigMap web alone:\n%s", len(built), r)
	}
	wantLiveMatches(t, built, ns)
	if strings.Contains(r.stdout+r.stderr, "registry-pw-4f2a") {
		t.Errorf("build shows the registry password:\n%s", r)
	}

	// Verified with a key that never signed it: refused, nothing printed.
	keys := t.TempDir()
	ocitest.Cosign(t, keys, "generate-key-pair")
	pub, err := os.ReadFile(filepath.Join(keys, "cosign.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cosign", Namespace: ns},
		Data: map[string][]byte{"cosign.pub": pub}}); err != nil {
		t.Fatal(err)
	}
	verified := gitsynctest.New(ns, "verified", url, func(g *gitsyncv1.GitSync) {
		g.Spec.Source.Ref = gitsyncv1.GitRef{Tag: "v1"}
		g.Spec.Source.SecretRef = &gitsyncv1.LocalObjectReference{Name: "registry"}
		g.Spec.Source.Verify = &gitsyncv1.GitVerification{Mode: gitsyncv1.VerifyCosign, SecretRef: gitsyncv1.LocalObjectReference{Name: "cosign"}}
		g.Spec.Suspend = true
	})
	if err := c.Create(ctx, verified); err != nil {
		t.Fatal(err)
	}
	refused := gitsync(t, "build", "--gitsync", ns+"/verified", "--kubeconfig", env.Kubeconfig, "--plain-http")
	wantCode(t, refused, exitError)
	if !strings.Contains(refused.stderr, "has no cosign signature") || !strings.Contains(refused.stderr, "the agent refuses it too") || refused.stdout != "" {
		t.Errorf("build of an unsigned artifact a GitSync verifies:\n%s", refused)
	}
}

// TestBuildGitSyncOfChart: the agent binary applies a GitSync whose source
// is a chart of a Helm repository (spec.source.chart, a semver range,
// spec.helm.values), and `gitsync build --gitsync` downloads the same
// version and prints what the agent applied.
//
// Checked: with renderRemote not branching on spec.source.chart, build
// fetches the repository's URL as Git and exits 2.
func TestBuildGitSyncOfChart(t *testing.T) {
	ns := env.Namespace(t)
	startRun(t, ns, "--leader-elect=false", "--allow-networks", "127.0.0.0/8")
	c := gitsyncClient(t)
	repo := chartrepotest.NewHTTPRepo(t)
	dir := filepath.Join(t.TempDir(), "leaf")
	chartrepotest.WriteTree(t, dir, chartrepotest.Leaf("leaf", "1.2.0"))
	repo.Add(t, dir)
	gs := gitsynctest.New(ns, "web", repo.URL(), func(g *gitsyncv1.GitSync) {
		g.Spec.Source.Chart, g.Spec.Source.Ref, g.Spec.Source.Path = "leaf", gitsyncv1.GitRef{Semver: "~1.2"}, ""
		g.Spec.Helm = &gitsyncv1.HelmSpec{Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"from the spec"}`)}}
	})
	poll(t, "create GitSync (CRD installed by the agent)", func(ctx context.Context) (bool, error) {
		return c.Create(ctx, gs.DeepCopy()) == nil, nil
	})
	waitApplied(t, c, client.ObjectKeyFromObject(gs), "1.2.0@sha256:")

	r := gitsync(t, "build", "--gitsync", ns+"/web", "--kubeconfig", env.Kubeconfig, "-o", "json")
	wantCode(t, r, 0)
	built := builtObjects(t, r.stdout, outputJSON)
	if len(built) != 1 || built[0].GetName() != "web-leaf" {
		t.Fatalf("build --gitsync printed %d objects, want ConfigMap web-leaf alone:\n%s", len(built), r)
	}
	if g, _, _ := unstructured.NestedString(built[0].Object, "data", "greeting"); g != "from the spec" {
		t.Errorf("greeting %q, want spec.helm.values' one", g)
	}
	wantLiveMatches(t, built, ns)
}

// TestBuildGitSyncOfHelmChart: build --gitsync of a GitSync whose
// spec.helm.chart renders a chart of a Helm repository over a values file
// of its Git source prints what the real agent applied: the chart
// downloaded, the Git values merged. Without the CLI's spec.helm.chart the
// values path holds no chart and renders as a plain directory of values,
// which is not a manifest: build fails.
func TestBuildGitSyncOfHelmChart(t *testing.T) {
	ns := env.Namespace(t)
	startRun(t, ns, "--leader-elect=false", "--allow-networks", "127.0.0.0/8")
	c := gitsyncClient(t)
	charts := chartrepotest.NewHTTPRepo(t)
	dir := filepath.Join(t.TempDir(), "leaf")
	chartrepotest.WriteTree(t, dir, chartrepotest.Leaf("leaf", "1.2.0"))
	charts.Add(t, dir)
	gitDir := newRunRepo(t)
	commit := commitFiles(t, gitDir, map[string]string{"values/prod.yaml": "greeting: from git\n"})
	gs := gitsynctest.New(ns, "web", "file://"+gitDir, func(g *gitsyncv1.GitSync) {
		g.Spec.Source.Path = "values"
		g.Spec.Helm = &gitsyncv1.HelmSpec{
			Chart:       &gitsyncv1.HelmChartRef{Repository: charts.URL(), Name: "leaf", Version: "~1.2"},
			ValuesFiles: []string{"values/prod.yaml"},
		}
	})
	poll(t, "create GitSync (CRD installed by the agent)", func(ctx context.Context) (bool, error) {
		return c.Create(ctx, gs.DeepCopy()) == nil, nil
	})
	waitApplied(t, c, client.ObjectKeyFromObject(gs), commit+"+chart:leaf@1.2.0@sha256:")

	r := gitsync(t, "build", "--gitsync", ns+"/web", "--kubeconfig", env.Kubeconfig, "-o", "json")
	wantCode(t, r, 0)
	built := builtObjects(t, r.stdout, outputJSON)
	if len(built) != 1 || built[0].GetName() != "web-leaf" {
		t.Fatalf("build --gitsync printed %d objects, want ConfigMap web-leaf alone:\n%s", len(built), r)
	}
	if g, _, _ := unstructured.NestedString(built[0].Object, "data", "greeting"); g != "from git" {
		t.Errorf("greeting %q, want the Git values file's", g)
	}
	wantLiveMatches(t, built, ns)
}
