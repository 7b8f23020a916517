package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/testcharts"
)

// chartFiles is the shared Helm chart under deploy/, with a values file
// elsewhere in the repository and a stray CI file at its root.
func chartFiles() map[string]string { return testcharts.GuestbookChart("deploy") }

// TestHelmChart: a chart path renders with spec.helm (values file from
// elsewhere in the repository, inline values, release name and namespace
// defaults), the test hook and NOTES.txt are not applied, a converged chart
// resyncs with no write, a values change is applied, and a values file
// outside the repository stalls the GitSync naming it.
func TestHelmChart(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	r := newRepo(t)
	files := chartFiles()
	group := ns + ".example.com"
	files["deploy/crds/gadgets.yaml"] = fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.%[1]s
spec:
  group: %[1]s
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, group)
	r.commit(files)
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "gadgets." + group}})
	})

	gs := newGitSync(ns, "shop", r.url(), func(g *v1.GitSync) {
		g.Spec.Helm = &v1.HelmSpec{
			ValuesFiles: []string{"env/prod.yaml"},
			Values:      &apiextensionsv1.JSON{Raw: []byte(`{"service": {"port": 8080}}`)},
		}
	})
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	got := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	if n := len(got.Status.Inventory.Entries); n != 3 {
		t.Errorf("inventory has %d entries, want 3 (CRD, Deployment, Service): %+v", n, got.Status.Inventory.Entries)
	}
	d := &appsv1.Deployment{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop-guestbook"}, d); err != nil {
		t.Fatalf("Deployment shop-guestbook (release name = GitSync name): %v", err)
	}
	if *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %d, want 2 from env/prod.yaml", *d.Spec.Replicas)
	}
	svc := &corev1.Service{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop-guestbook"}, svc); err != nil {
		t.Fatal(err)
	}
	if p := svc.Spec.Ports[0].Port; p != 8080 {
		t.Errorf("service port = %d, want 8080 from spec.helm.values", p)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop-guestbook-ping"}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("test hook Pod shop-guestbook-ping: %v, want NotFound", err)
	}
	secrets := &corev1.SecretList{}
	if err := c.List(context.Background(), secrets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if strings.HasPrefix(s.Name, "sh.helm.release") {
			t.Errorf("Helm release Secret %s written", s.Name)
		}
	}

	t.Run("converged chart resyncs with no write", func(t *testing.T) {
		a.settle(t, c, key, 1)
		done := a.reconciles(t, "success")
		writes, mark := a.count.writes.Load(), len(a.count.requests())
		poke(t, c, key, "resync")
		eventually(t, "resync reconcile", func(context.Context) (bool, error) { return a.reconciles(t, "success") > done, nil })
		if w := a.count.writes.Load() - writes; w != 0 {
			t.Errorf("resync of a converged chart sent %d writes, want 0 (rendered empty maps or labels the apiserver normalises?): %v", w, a.count.requests()[mark:])
		}
	})

	t.Run("values change applies", func(t *testing.T) {
		patchHelm(t, c, key, func(h *v1.HelmSpec) { h.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicaCount": 3}`)} })
		waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop-guestbook"}, d); err != nil || *d.Spec.Replicas != 3 {
			t.Errorf("after spec.helm.values replicaCount 3: %v replicas, %v", d.Spec.Replicas, err)
		}
	})

	t.Run("values file outside the repository", func(t *testing.T) {
		patchHelm(t, c, key, func(h *v1.HelmSpec) { h.ValuesFiles = []string{"../../../etc/passwd"} })
		got := waitCondition(t, c, key, v1.ConditionStalled, metav1.ConditionTrue, nil)
		cond := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionStalled)
		if cond.Reason != v1.ReasonRenderFailed || !strings.Contains(cond.Message, "../../../etc/passwd") {
			t.Errorf("Stalled = %s %q, want %s naming the file", cond.Reason, cond.Message, v1.ReasonRenderFailed)
		}
		if strings.Contains(cond.Message, "root:") {
			t.Errorf("message quotes /etc/passwd: %q", cond.Message)
		}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop-guestbook"}, d); err != nil {
			t.Errorf("Deployment shop-guestbook after a failed render: %v, want it kept", err)
		}
	})
}

// TestIgnoreRules: a stray CI file and a values file beside plain manifests
// no longer stall the sync: the CI file by default, the values file by the
// repository's .gitsyncignore; spec.ignore then leaves out one more file,
// which is pruned.
func TestIgnoreRules(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	r := newRepo(t)
	r.commit(map[string]string{
		"deploy/a.yaml":                  configMap("a", "1"),
		"deploy/b.yaml":                  configMap("b", "1"),
		"deploy/bitbucket-pipelines.yml": "pipelines:\n  default: []\n",
		"deploy/values.yaml":             "replicas: 3\n",
		".gitsyncignore":                 "values.yaml\n",
	})
	gs := newGitSync(ns, "ign", r.url())
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	got := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	if n := len(got.Status.Inventory.Entries); n != 2 {
		t.Errorf("inventory has %d entries, want 2", n)
	}

	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Ignore = "/deploy/b.yaml\n"
	if err := c.Patch(context.Background(), got, patch); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return g.Status.Inventory != nil && len(g.Status.Inventory.Entries) == 1
	})
	if _, err := getCM(t, c, ns, "b"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap b after spec.ignore named it: %v, want pruned", err)
	}
}

func patchHelm(t *testing.T, c client.Client, key client.ObjectKey, mutate func(*v1.HelmSpec)) {
	t.Helper()
	gs := &v1.GitSync{}
	if err := c.Get(context.Background(), key, gs); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(gs.DeepCopy())
	mutate(gs.Spec.Helm)
	if err := c.Patch(context.Background(), gs, patch); err != nil {
		t.Fatal(err)
	}
}
