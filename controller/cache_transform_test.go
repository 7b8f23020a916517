package controller_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// TestAdoptedFromKubectlStaysInSync: an object kubectl applied (client
// side: a last-applied annotation and kubectl's managedFields entry) and
// gitsync adopted is in sync on the next reconcile although the agent's
// cache holds neither — including when only a dry-run can decide (a
// Deployment's cpu "0.5", which the server stores as 500m). Without the
// diff leaving the annotation out of its comparison, every reconcile would
// re-apply it.
func TestAdoptedFromKubectlStaysInSync(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	manifest := deploymentWithCPU("web", "0.5")

	d := &appsv1.Deployment{}
	if err := yaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096).Decode(d); err != nil {
		t.Fatal(err)
	}
	d.Namespace = ns
	applied, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	d.Annotations = map[string]string{lastApplied: string(applied)}
	if err := c.Create(ctx, d, client.FieldOwner("kubectl-client-side-apply")); err != nil {
		t.Fatal(err)
	}

	r := newRepo(t)
	r.commit(map[string]string{"deploy/web.yaml": manifest})
	gs := newGitSync(ns, "adopt", r.url())
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)

	live := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, live); err != nil {
		t.Fatal(err)
	}
	if _, ok := live.Annotations[lastApplied]; !ok {
		t.Fatal("the cluster's object lost kubectl's annotation; the test needs it there")
	}
	cached := &unstructured.Unstructured{}
	cached.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	if err := a.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, cached); err != nil {
		t.Fatal(err)
	}
	if _, ok := cached.GetAnnotations()[lastApplied]; ok {
		t.Error("the agent's cache holds the last-applied annotation")
	}
	for _, e := range cached.GetManagedFields() {
		if e.Manager != "gitsync" {
			t.Errorf("the agent's cache holds %s's managedFields entry", e.Manager)
		}
	}

	configured := a.applied(t, "configured", "Deployment")
	commit := r.commit(map[string]string{"deploy/other.yaml": configMap("other", "1")})
	request(t, c, key, "second-commit")
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, commit)
	})
	if got := a.applied(t, "configured", "Deployment"); got != configured {
		t.Errorf("the adopted Deployment was applied again (configured %v → %v): the diff saw drift where there is none", configured, got)
	}
}

// TestEditTakeoverIsDriftWhenGitAgrees: a field kubectl edit took over is
// drift even once Git declares the same value; the agent takes it back,
// although its cache keeps no entry of kubectl-edit.
func TestEditTakeoverIsDriftWhenGitAgrees(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	r := newRepo(t)
	r.commit(map[string]string{"deploy/a.yaml": configMap("a", "one")})
	gs := newGitSync(ns, "takeover", r.url())
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)

	g := &v1.GitSync{}
	if err := c.Get(ctx, key, g); err != nil {
		t.Fatal(err)
	}
	p := client.MergeFrom(g.DeepCopy())
	g.Spec.Suspend = true
	if err := c.Patch(ctx, g, p); err != nil {
		t.Fatal(err)
	}
	eventually(t, "suspended reconcile", func(context.Context) (bool, error) { return a.reconciles(t, "suspended") > 0, nil })

	cm, err := getCM(t, c, ns, "a")
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["value"] = "two"
	if err := c.Update(ctx, cm, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	if owns(t, c, ns, "a", "gitsync", "f:value") {
		t.Fatal("gitsync still owns data.value after kubectl edit changed it; the test needs the takeover")
	}
	commit := r.commit(map[string]string{"deploy/a.yaml": configMap("a", "two")})
	configured := a.applied(t, "configured", "ConfigMap")

	if err := c.Get(ctx, key, g); err != nil {
		t.Fatal(err)
	}
	// Resume and ask for a fresh resolve in one write, so the first apply
	// after the takeover is of the commit that agrees with the edit.
	p = client.MergeFrom(g.DeepCopy())
	g.Spec.Suspend = false
	metav1.SetMetaDataAnnotation(&g.ObjectMeta, v1.AnnotationRequestedAt, "git-agrees")
	if err := c.Patch(ctx, g, p); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, commit)
	})
	if !owns(t, c, ns, "a", "gitsync", "f:value") {
		t.Error("gitsync did not take data.value back from kubectl-edit")
	}
	if got := a.applied(t, "configured", "ConfigMap"); got != configured+1 {
		t.Errorf("configured ConfigMaps %v → %v, want one more (the takeover is drift)", configured, got)
	}
}

// owns reports whether manager's entry on ConfigMap ns/name names field.
func owns(t *testing.T, c client.Client, ns, name, manager, field string) bool {
	t.Helper()
	cm, err := getCM(t, c, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range cm.ManagedFields {
		if e.Manager == manager && e.FieldsV1 != nil && bytes.Contains(e.FieldsV1.Raw, []byte(`"`+field+`"`)) {
			return true
		}
	}
	return false
}

// deploymentWithCPU is a Deployment whose cpu request the server
// normalises ("0.5" is stored as 500m), so only a dry-run can tell it is in
// sync.
func deploymentWithCPU(name, cpu string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers:
      - name: app
        image: nginx
        resources: {requests: {cpu: %[2]q}}
`, name, cpu)
}
