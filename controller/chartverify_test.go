package controller_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/chartrepotest"
	"gitsync.dev/gitsync/internal/gittest"
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
