package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gittest"
)

// TestGitSyncPreviewVerifies: `diff --gitsync` and `build --gitsync` of a
// GitSync with spec.source.verify refuse an unsigned revision of its
// repository (served by the loopback Git server) as the agent does, exit 2
// naming the revision and printing no object; once the branch's commit is
// signed by the trusted SSH key (real git and ssh-keygen), build prints it.
// A checkout directory has nothing to verify.
//
// Checked: with the preview's verification removed, build of the unsigned
// revision exits 0 and prints its ConfigMap.
func TestGitSyncPreviewVerifies(t *testing.T) {
	t.Parallel()
	bob := gittest.NewSSHKey(t, "bob@example.com")
	c := statusClient(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	root := t.TempDir()
	repo := gittest.NewRepo(t, filepath.Join(root, "app"))
	srv := gittest.New(t, root, gittest.Options{})
	unsigned := repo.Commit("unsigned", map[string]string{"deploy/cm.yaml": configMap("cm", "k", "v1")})
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "trusted"},
		StringData: map[string]string{"allowed_signers": "bob@example.com " + bob.Public}}); err != nil {
		t.Fatal(err)
	}
	gs := &gitsyncv1.GitSync{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: gitsyncv1.GitSyncSpec{Source: gitsyncv1.GitSource{
			URL: srv.URL + "/app", Ref: gitsyncv1.GitRef{Branch: "main"}, Path: "deploy",
			Verify: &gitsyncv1.GitVerification{SecretRef: gitsyncv1.LocalObjectReference{Name: "trusted"}},
		}},
	}
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"diff", "build"} {
		r := gitsync(t, verb, "--gitsync", ns+"/web", "--kubeconfig", env.Kubeconfig)
		wantCode(t, r, 2)
		for _, w := range []string{"sha1:" + unsigned, "failed verification", "commit is not signed", "spec.source.verify"} {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s of an unsigned revision: stderr does not say %q:\n%s", verb, w, r)
			}
		}
		if strings.Contains(r.stdout, "ConfigMap") {
			t.Errorf("%s of an unsigned revision printed objects:\n%s", verb, r)
		}
	}
	checkout := gitsync(t, "build", "--gitsync", ns+"/web", repo.Dir, "--kubeconfig", env.Kubeconfig)
	wantCode(t, checkout, 0)

	repo.CommitSigned("signed", map[string]string{"deploy/cm.yaml": configMap("cm", "k", "v2")}, bob)
	r := gitsync(t, "build", "--gitsync", ns+"/web", "--kubeconfig", env.Kubeconfig, "-o", outputJSON)
	wantCode(t, r, 0)
	if objs := builtObjects(t, r.stdout, outputJSON); len(objs) != 1 || objs[0].GetName() != "cm" {
		t.Errorf("build of a signed revision: want ConfigMap cm, got:\n%s", r)
	}
}
