package livecache_test

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"gitsync.dev/gitsync/livecache"
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
	out, err := livecache.CompactLive(u)
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
	out2, _ := livecache.CompactLive(other)
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

	again, _ := livecache.CompactLive(got.DeepCopy())
	if d := cmp.Diff(got.Object, again.(*unstructured.Unstructured).Object); d != "" {
		t.Errorf("second transform changed the object (-first +second):\n%s", d)
	}

	// gitsync owns the annotation (Git declares it): kept.
	owned := decodeLive(t, strings.Replace(liveCM, `"fieldsV1":{"f:data":{"f:value":{}},"f:metadata":{`,
		`"fieldsV1":{"f:data":{"f:value":{}},"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/last-applied-configuration":{}},`, 1))
	out, _ = livecache.CompactLive(owned)
	if _, ok := out.(*unstructured.Unstructured).GetAnnotations()[lastApplied]; !ok {
		t.Error("last-applied annotation gitsync owns was dropped")
	}

	// Only the last-applied annotation: the annotations go altogether.
	only := decodeLive(t, strings.Replace(liveCM, `,"team":"x"`, "", 1))
	out, _ = livecache.CompactLive(only)
	if _, ok := out.(*unstructured.Unstructured).Object["metadata"].(map[string]any)["annotations"]; ok {
		t.Error("empty annotations map left behind")
	}

	for _, other := range []any{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{lastApplied: "{}"}}},
		cache.DeletedFinalStateUnknown{Key: "ns/a"}} {
		out, err := livecache.CompactLive(other)
		if err != nil || !cmp.Equal(out, other) {
			t.Errorf("CompactLive(%T) = %v, %v; want it unchanged", other, out, err)
		}
	}
}
