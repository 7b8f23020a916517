package controller_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/chartrepotest"
	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/internal/ocitest"
)

// TestChartSourceProvenance: a GitSync of a chart of a Helm HTTP
// repository with verify.mode Provenance applies a version packaged with
// `helm package --sign` by a trusted key and names its signer; a newer
// version in range without a provenance file is Stalled
// VerificationFailed with the signed version's objects kept; a newer
// signed one is applied again.
//
// Checked: with chartrepo's Fetcher.Verify answering a signer for any
// chart, the test fails on the first version's signer.
func TestChartSourceProvenance(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	key := gittest.NewGPGKey(t, "Chart Signer <charts@example.com>")
	ring, name := key.SecretKeyring(t, t.TempDir())
	repo := chartrepotest.NewHTTPRepo(t)
	repo.AddSigned(t, chartDir(t, "leaf", "1.0.0"), ring, name)
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "chart-keys", Namespace: ns},
		StringData: map[string]string{"signer.asc": key.Public}}); err != nil {
		t.Fatal(err)
	}
	gs := chartSource(ns, "web", repo.URL(), "leaf", v1.GitRef{Semver: "1.x"}, func(g *v1.GitSync) {
		g.Spec.Source.Verify = &v1.GitVerification{Mode: v1.VerifyProvenance, SecretRef: v1.LocalObjectReference{Name: "chart-keys"}}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	k := client.ObjectKeyFromObject(gs)
	got := waitCondition(t, c, k, v1.ConditionReady, metav1.ConditionTrue, nil)
	if !strings.HasPrefix(got.Status.LastAppliedRevision, "1.0.0@sha256:") || !strings.Contains(got.Status.LastAppliedSigner, key.Fingerprint) {
		t.Fatalf("applied %q signed by %q, want 1.0.0 signed by %s", got.Status.LastAppliedRevision, got.Status.LastAppliedSigner, key.Fingerprint)
	}

	repo.Add(t, chartDir(t, "leaf", "1.1.0")) // unsigned
	waitReason(t, c, k, v1.ReasonVerificationFailed, "no provenance file")
	if cm, err := getCM(t, c, ns, "web-leaf"); err != nil || cm.Labels["chart"] != "leaf-1.0.0" {
		t.Errorf("ConfigMap web-leaf while 1.1.0 is unsigned: %v %v; want 1.0.0's kept", cm.Labels, err)
	}

	repo.AddSigned(t, chartDir(t, "leaf", "1.2.0"), ring, name)
	waitCondition(t, c, k, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.HasPrefix(g.Status.LastAppliedRevision, "1.2.0@sha256:")
	})
	if cm, err := getCM(t, c, ns, "web-leaf"); err != nil || cm.Labels["chart"] != "leaf-1.2.0" {
		t.Errorf("ConfigMap web-leaf after the signed 1.2.0: %v %v", cm.Labels, err)
	}
}

// TestChartRepositoryCosign: charts of an OCI registry whose
// spec.helm.repositories entry has verify.mode Cosign, as spec.helm.chart
// and as a Chart.yaml dependency of a chart in Git, are Stalled
// VerificationFailed and apply nothing while unsigned; once the real cosign
// signed the chart's manifest both apply, the spec.helm.chart one naming
// the key as its signer; when the Secret's key is replaced by another, both
// are refused again at their next sync, without a new chart version.
//
// Checked: with helmChartVerified not called from sync, spec.helm.chart's
// GitSync applies naming no signer and the test fails; before a refused
// signature was kept out of the stalled-render memory, the umbrella stayed
// refused after signing; before tenant.RefsOf listed verify.secretRef, the
// Secret's change reconciled neither GitSync.
func TestChartRepositoryCosign(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	reg := chartrepotest.NewRegistry(t)
	digest := reg.Push(t, chartDir(t, "cache", "0.4.0"))
	keys, otherKeys := t.TempDir(), t.TempDir()
	ocitest.Cosign(t, keys, "generate-key-pair")
	ocitest.Cosign(t, otherKeys, "generate-key-pair")
	readPub := func(dir string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "cosign.pub"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "chart-keys", Namespace: ns},
		Data: map[string][]byte{"cosign.pub": readPub(keys)}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	verified := []v1.HelmRepository{{URL: reg.URL(), Verify: &v1.ChartVerification{Mode: v1.VerifyCosign, SecretRef: v1.LocalObjectReference{Name: "chart-keys"}}}}

	r := newRepo(t)
	r.commit(map[string]string{
		"env/values.yaml": "greeting: from git\n",
		"umbrella/Chart.yaml": "apiVersion: v2\nname: umbrella\nversion: 0.1.0\ndependencies:\n" +
			"- name: cache\n  version: 0.4.0\n  repository: " + reg.URL() + "\n",
	})
	chart := newGitSync(ns, "chart", r.url(), func(g *v1.GitSync) {
		g.Spec.Source.Path = "env"
		g.Spec.Helm = &v1.HelmSpec{
			Chart:        &v1.HelmChartRef{Repository: reg.URL(), Name: "cache", Version: "0.4.0"},
			ValuesFiles:  []string{"env/values.yaml"},
			Repositories: verified,
		}
	})
	umbrella := newGitSync(ns, "umbrella", r.url(), func(g *v1.GitSync) {
		g.Spec.Source.Path = "umbrella"
		g.Spec.Helm = &v1.HelmSpec{Repositories: verified}
	})
	for _, gs := range []*v1.GitSync{chart, umbrella} {
		if err := c.Create(ctx, gs); err != nil {
			t.Fatal(err)
		}
	}
	cms := map[*v1.GitSync]string{chart: "chart-cache", umbrella: "umbrella-cache"}
	for gs, cm := range cms {
		waitReason(t, c, client.ObjectKeyFromObject(gs), v1.ReasonVerificationFailed, "no cosign signature")
		if _, err := getCM(t, c, ns, cm); err == nil {
			t.Errorf("GitSync %s applied an unsigned chart (ConfigMap %s)", gs.Name, cm)
		}
	}

	ocitest.Sign(t, keys, reg.Host()+"/charts/cache@"+digest)
	for gs, cm := range cms {
		key := client.ObjectKeyFromObject(gs)
		request(t, c, key, "signed")
		got := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
		if _, err := getCM(t, c, ns, cm); err != nil {
			t.Errorf("GitSync %s: ConfigMap %s of the signed chart: %v", gs.Name, cm, err)
		}
		if gs == chart && !strings.Contains(got.Status.LastAppliedSigner, "chart cache 0.4.0: cosign key SHA256:") {
			t.Errorf("spec.helm.chart applied with signer %q, want the cosign key", got.Status.LastAppliedSigner)
		}
	}

	secret.Data = map[string][]byte{"cosign.pub": readPub(otherKeys)}
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	for gs := range cms {
		waitReason(t, c, client.ObjectKeyFromObject(gs), v1.ReasonVerificationFailed, "signed by none of the 1 keys")
	}
}
