package examples_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	sourcerender "gitsync.dev/gitsync/source/render"
	"gitsync.dev/gitsync/source/sops"
	"gitsync.dev/gitsync/source/substitute"
)

// TestSOPS decrypts examples/sops/manifests with its test-only key, as a
// GitSync with spec.decryption would, and applies the result: the Secret
// holds the plaintext, and the example GitSync validates against the CRD.
func TestSOPS(t *testing.T) {
	r, err := sourcerender.Render(context.Background(), repoRoot(t), "examples/sops/manifests", sourcerender.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(repoRoot(t), "examples/sops/test-only.agekey"))
	if err != nil {
		t.Fatal(err)
	}
	keys := func() ([]age.Identity, error) { return age.ParseIdentities(bytes.NewReader(key)) }
	objs, _, err := sops.Objects(r.Objects, r.SOPSLookup, keys)
	if err != nil {
		t.Fatal(err)
	}
	wantSubjects(t, objs, "Namespace/sops-example", "Secret/sops-example/db-credentials")
	mustApply(t, "", objs)
	s := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: "sops-example", Name: "db-credentials"}, s); err != nil {
		t.Fatal(err)
	}
	if string(s.Data["password"]) != "correct-horse-battery-staple" || string(s.Data["username"]) != "app" {
		t.Errorf("Secret db-credentials does not hold the decrypted values")
	}
	applyGitSyncFile(t, "examples/sops/gitsync.yaml")
}

// TestSubstitute substitutes examples/substitute/manifests with the
// variables of its ConfigMap and GitSync, as the agent would, and applies it.
func TestSubstitute(t *testing.T) {
	objs := render(t, "examples/substitute/manifests")
	var cm corev1.ConfigMap
	readYAML(t, "examples/substitute/cluster-vars.yaml", &cm)
	var gs v1.GitSync
	readYAML(t, "examples/substitute/gitsync.yaml", &gs)
	var vars substitute.Variables
	for k, v := range cm.Data {
		vars.Set(k, v, false)
	}
	for k, v := range gs.Spec.Substitute {
		vars.Set(k, v, false)
	}
	res, err := substitute.Objects(objs, vars, substitute.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "substitute-example"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	mustApply(t, "substitute-example", res.Objects)
	live := get(t, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "substitute-example", "web-settings")
	want := map[string]any{"cluster": "staging-eu", "greeting": "Hello from staging-eu (eu-central-1)", "template": "${NOT_A_VARIABLE}"}
	got, _, _ := unstructured.NestedMap(live.Object, "data")
	for k, v := range want {
		if got[k] != v {
			t.Errorf("web-settings data.%s = %v, want %v", k, got[k], v)
		}
	}
	applyGitSyncFile(t, "examples/substitute/gitsync.yaml")
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), path))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// applyGitSyncFile applies an example GitSync that lives beside its
// manifests (not in examples/gitsyncs: it needs a Secret or ConfigMap made
// first), so the CRD validates it.
func applyGitSyncFile(t *testing.T, path string) {
	t.Helper()
	installGitSyncCRD(t)
	u := &unstructured.Unstructured{}
	readYAML(t, path, &u.Object)
	mustApply(t, "", []*unstructured.Unstructured{u})
}
