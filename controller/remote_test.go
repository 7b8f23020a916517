package controller_test

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/object"
)

// TestRemoteClusterTarget: a GitSync with spec.kubeConfig applies through
// the remote cluster's own clients and managed-only cache (here the remote
// is the test apiserver again, reached through a kubeconfig Secret), and
// its drift watch repairs an out-of-band edit there.
func TestRemoteClusterTarget(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	kubeconfig, err := os.ReadFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "remote", Namespace: ns}, Data: map[string][]byte{"value": kubeconfig}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	r := newRepo(t)
	r.commit(map[string]string{"deploy/a.yaml": configMap("remote", "git")})
	gs := newGitSync(ns, "remote", r.url(), func(g *v1.GitSync) {
		g.Spec.KubeConfig = &v1.KubeConfigReference{SecretRef: v1.SecretKeyReference{Name: "remote"}}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, client.ObjectKeyFromObject(gs), v1.ConditionReady, metav1.ConditionTrue, nil)
	cm, err := getCM(t, c, ns, "remote")
	if err != nil || !object.OwnedBy(cm.Labels, "remote", ns) {
		t.Fatalf("remote ConfigMap = %v (%v), want it applied with owner labels", cm.Labels, err)
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data["value"] = "edited by hand"
	if err := c.Patch(ctx, cm, patch, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "remote drift reverted", func(context.Context) (bool, error) {
		cm, err := getCM(t, c, ns, "remote")
		return err == nil && cm.Data["value"] == "git", err
	})
}
