package controller_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/controller"
)

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// liveCM is a ConfigMap as the apiserver returns it after kubectl's
// client-side apply, gitsync's apply and a kubectl edit.
const liveCM = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"7",
"labels":{"gitsync.dev/name":"app","gitsync.dev/namespace":"ns"},
"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"value\":\"1\"}}","team":"x"},
"managedFields":[
 {"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1",
  "fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{},"f:team":{}}}}},
 {"manager":"gitsync","operation":"Apply","apiVersion":"v1","time":"2026-01-01T00:00:01Z","fieldsType":"FieldsV1",
  "fieldsV1":{"f:data":{"f:value":{}},"f:metadata":{"f:labels":{"f:gitsync.dev/name":{},"f:gitsync.dev/namespace":{}}}}},
 {"manager":"kubectl-edit","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:02Z","fieldsType":"FieldsV1",
  "fieldsV1":{"f:data":{"f:other":{}}}}]},
"data":{"value":"1","other":"2"}}`

func decodeLive(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(s)); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestCompactLive: the cache keeps gitsync's managedFields entry (with its
// FieldsV1 intact), values, labels and other annotations, and drops other
// managers' entries and kubectl's last-applied annotation — unless gitsync
// owns that annotation. It is idempotent and leaves other types alone.
func TestCompactLive(t *testing.T) {
	u := decodeLive(t, liveCM)
	want := u.DeepCopy()
	out, err := controller.CompactLive(u)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*unstructured.Unstructured)
	mf := got.GetManagedFields()
	if len(mf) != 1 || mf[0].Manager != "gitsync" || mf[0].Operation != "Apply" {
		t.Fatalf("managedFields = %+v, want gitsync's Apply entry only", mf)
	}
	wantFields := `{"f:data":{"f:value":{}},"f:metadata":{"f:labels":{"f:gitsync.dev/name":{},"f:gitsync.dev/namespace":{}}}}`
	if d := cmp.Diff(wantFields, string(mf[0].FieldsV1.Raw)); d != "" {
		t.Errorf("gitsync's FieldsV1 changed (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{"team": "x"}, got.GetAnnotations()); d != "" {
		t.Errorf("annotations (-want +got):\n%s", d)
	}
	for _, f := range [][]string{{"data"}, {"metadata", "labels"}, {"metadata", "uid"}, {"metadata", "resourceVersion"},
		{"metadata", "namespace"}, {"metadata", "creationTimestamp"}, {"kind"}, {"apiVersion"}} {
		w, _, _ := unstructured.NestedFieldNoCopy(want.Object, f...)
		g, _, _ := unstructured.NestedFieldNoCopy(got.Object, f...)
		if d := cmp.Diff(w, g); d != "" {
			t.Errorf("%s changed (-want +got):\n%s", strings.Join(f, "."), d)
		}
	}
	if mf[0].Time != nil {
		t.Errorf("gitsync's entry kept its timestamp %v", mf[0].Time)
	}
	// A second object of the same shape and labels shares both with the
	// first (one copy in memory), and its values stay its own.
	other := decodeLive(t, strings.ReplaceAll(strings.ReplaceAll(liveCM, `"name":"a"`, `"name":"b"`), `"value":"1"`, `"value":"9"`))
	out2, _ := controller.CompactLive(other)
	second := out2.(*unstructured.Unstructured)
	for _, f := range []string{"labels", "managedFields"} {
		a := reflect.ValueOf(got.Object["metadata"].(map[string]any)[f]).UnsafePointer()
		b := reflect.ValueOf(second.Object["metadata"].(map[string]any)[f]).UnsafePointer()
		if a != b {
			t.Errorf("metadata.%s of two objects with equal %s is not shared", f, f)
		}
	}
	if unsafe.StringData(got.GetNamespace()) != unsafe.StringData(second.GetNamespace()) {
		t.Errorf("the namespace of two objects is not one string")
	}
	if v, _, _ := unstructured.NestedString(second.Object, "data", "value"); v != "9" || second.GetName() != "b" {
		t.Errorf("second object = %s with data.value %q, want b with 9", second.GetName(), v)
	}

	again, _ := controller.CompactLive(got.DeepCopy())
	if d := cmp.Diff(got.Object, again.(*unstructured.Unstructured).Object); d != "" {
		t.Errorf("second transform changed the object (-first +second):\n%s", d)
	}

	// gitsync owns the annotation (Git declares it): kept.
	owned := decodeLive(t, strings.Replace(liveCM, `"fieldsV1":{"f:data":{"f:value":{}},"f:metadata":{`,
		`"fieldsV1":{"f:data":{"f:value":{}},"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/last-applied-configuration":{}},`, 1))
	out, _ = controller.CompactLive(owned)
	if _, ok := out.(*unstructured.Unstructured).GetAnnotations()[lastApplied]; !ok {
		t.Error("last-applied annotation gitsync owns was dropped")
	}

	// Only the last-applied annotation: the annotations go altogether.
	only := decodeLive(t, strings.Replace(liveCM, `,"team":"x"`, "", 1))
	out, _ = controller.CompactLive(only)
	if _, ok := out.(*unstructured.Unstructured).Object["metadata"].(map[string]any)["annotations"]; ok {
		t.Error("empty annotations map left behind")
	}

	for _, other := range []any{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{lastApplied: "{}"}}},
		cache.DeletedFinalStateUnknown{Key: "ns/a"}} {
		out, err := controller.CompactLive(other)
		if err != nil || !cmp.Equal(out, other) {
			t.Errorf("CompactLive(%T) = %v, %v; want it unchanged", other, out, err)
		}
	}
}

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
