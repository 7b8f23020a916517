package controller_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/chartrepotest"
	"gitsync.dev/gitsync/internal/ocitest"
)

// chartDir writes the leaf chart name at version into a new directory.
func chartDir(t *testing.T, name, version string) string {
	t.Helper()
	dir := t.TempDir() + "/" + name
	chartrepotest.WriteTree(t, dir, chartrepotest.Leaf(name, version))
	return dir
}

// chartSource is a GitSync rendering chart of the repository url at ref,
// with spec.helm.values greeting.
func chartSource(ns, name, url, chart string, ref v1.GitRef, mutate ...func(*v1.GitSync)) *v1.GitSync {
	return newGitSync(ns, name, url, append([]func(*v1.GitSync){func(g *v1.GitSync) {
		g.Spec.Source.Chart, g.Spec.Source.Ref, g.Spec.Source.Path = chart, ref, ""
		g.Spec.Helm = &v1.HelmSpec{Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"from the GitSync"}`)}}
		g.Spec.Interval = metav1.Duration{Duration: time.Second}
	}}, mutate...)...)
}

// TestChartAsSource: a GitSync whose source is a chart of a Helm HTTP
// repository (credentials from a Secret) renders it with spec.helm.values
// at the highest version its semver range allows, its revision the
// version and archive digest; while nothing is published, each poll reads
// index.yaml alone (no archive) and sends no API request; a newer version
// in range is applied at the next poll. A chart of an OCI registry, by its
// version tag, converges too, read as an artifact: verified with cosign, it
// is refused until the real cosign signed its digest.
//
// Checked: with chartRevision resolving without FreshAfter, the newer
// version waits for the 5-minute index TTL and the test times out.
func TestChartAsSource(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	repo := chartrepotest.NewHTTPRepo(t)
	repo.RequireAuth("charts", "chart-pw-91c")
	repo.Add(t, chartDir(t, "leaf", "1.0.0"))
	repo.Add(t, chartDir(t, "leaf", "2.0.0")) // out of range
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: ns},
		StringData: map[string]string{"username": "charts", "password": "chart-pw-91c"}}); err != nil {
		t.Fatal(err)
	}
	gs := chartSource(ns, "web", repo.URL(), "leaf", v1.GitRef{Semver: "1.x"}, func(g *v1.GitSync) {
		g.Spec.Source.SecretRef = &v1.LocalObjectReference{Name: "charts"}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	got := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	if !strings.HasPrefix(got.Status.LastAppliedRevision, "1.0.0@sha256:") {
		t.Fatalf("applied %q, want 1.0.0@sha256:…", got.Status.LastAppliedRevision)
	}
	cm, err := getCM(t, c, ns, "web-leaf")
	if err != nil || cm.Data["greeting"] != "from the GitSync" || cm.Labels["chart"] != "leaf-1.0.0" {
		t.Fatalf("ConfigMap web-leaf: %v %v %v; want chart leaf-1.0.0 with spec.helm.values", cm.Data, cm.Labels, err)
	}

	a.settle(t, c, key, 1)
	a.waitFetches(t, "success", 1)
	reads, writes, seen := a.count.reads.Load(), a.count.writes.Load(), len(a.count.requests())
	before := len(repo.Paths())
	a.waitFetches(t, "success", 3)
	for _, p := range repo.Paths()[before:] {
		if p != "GET /charts/index.yaml" {
			t.Errorf("a poll of an unchanged repository sent %s; want index.yaml reads only", p)
		}
	}
	if r, w := a.count.reads.Load()-reads, a.count.writes.Load()-writes; r != 0 || w != 0 {
		t.Errorf("polls of a converged chart source sent %d API reads and %d writes, want none: %v", r, w, a.count.requests()[seen:])
	}

	repo.Add(t, chartDir(t, "leaf", "1.1.0"))
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.HasPrefix(g.Status.LastAppliedRevision, "1.1.0@sha256:")
	})
	if cm, err := getCM(t, c, ns, "web-leaf"); err != nil || cm.Labels["chart"] != "leaf-1.1.0" {
		t.Errorf("ConfigMap web-leaf after 1.1.0 was published: %v %v", cm.Labels, err)
	}
	assertNotShown(t, c, ns, &syncBuffer{}, got, "chart-pw-91c")

	reg := chartrepotest.NewRegistry(t)
	reg.Push(t, chartDir(t, "cache", "0.4.0"))
	fromOCI := chartSource(ns, "cache", reg.URL(), "cache", v1.GitRef{Tag: "0.4.0"})
	if err := c.Create(ctx, fromOCI); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, c, client.ObjectKeyFromObject(fromOCI), v1.ConditionReady, metav1.ConditionTrue, nil)
	if !strings.HasPrefix(got.Status.LastAppliedRevision, "0.4.0@sha256:") {
		t.Errorf("applied %q from the registry, want 0.4.0@sha256:…", got.Status.LastAppliedRevision)
	}
	if cm, err := getCM(t, c, ns, "cache-cache"); err != nil || cm.Data["greeting"] != "from the GitSync" {
		t.Errorf("ConfigMap cache-cache: %v %v", cm.Data, err)
	}

	// The registry's chart verified with cosign: refused until signed.
	_, digest, _ := strings.Cut(got.Status.LastAppliedRevision, "@")
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
	signed := chartSource(ns, "signed", reg.URL(), "cache", v1.GitRef{Tag: "0.4.0"}, func(g *v1.GitSync) {
		g.Spec.Source.Verify = &v1.GitVerification{Mode: v1.VerifyCosign, SecretRef: v1.LocalObjectReference{Name: "cosign"}}
		g.Spec.Helm.ReleaseName = "signed"
	})
	if err := c.Create(ctx, signed); err != nil {
		t.Fatal(err)
	}
	waitReason(t, c, client.ObjectKeyFromObject(signed), v1.ReasonVerificationFailed, "has no cosign signature")
	if _, err := getCM(t, c, ns, "signed-cache"); err == nil {
		t.Error("an unsigned chart was applied by a GitSync that verifies it")
	}
	ocitest.Sign(t, keys, reg.Host()+"/charts/cache@"+digest)
	request(t, c, client.ObjectKeyFromObject(signed), "signed")
	waitCondition(t, c, client.ObjectKeyFromObject(signed), v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.HasPrefix(g.Status.LastAppliedSigner, "cosign key SHA256:")
	})
}
