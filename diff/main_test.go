package diff_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"gitsync.dev/gitsync/internal/testenv"
	"gitsync.dev/gitsync/object"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{}, &env))
}

// countingClient returns a client whose requests are counted.
func countingClient(t testing.TB) (client.Client, *testenv.RequestCounter) {
	t.Helper()
	ct := &testenv.RequestCounter{}
	c, err := client.New(ct.Wrap(env.Config), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatalf("counting client: %v", err)
	}
	return c, ct
}

// decode parses a YAML manifest, replacing NS with ns, as the renderer
// does (numbers as int64).
func decode(t testing.TB, manifest, ns string) *unstructured.Unstructured {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(strings.ReplaceAll(manifest, "NS", ns)))
	if err != nil {
		t.Fatalf("parse manifest: %v", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatalf("decode manifest: %v", err)
	}
	return u
}

// applyAs server-side applies obj as manager and returns the live object.
func applyAs(t testing.TB, obj *unstructured.Unstructured, manager string) *unstructured.Unstructured {
	t.Helper()
	cp := obj.DeepCopy()
	err := env.Client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(cp),
		client.FieldOwner(manager), client.ForceOwnership)
	if err != nil {
		t.Fatalf("apply %s as %s: %v", object.IDOf(obj), manager, err)
	}
	return get(t, obj)
}

// get reads the live object from the apiserver.
func get(t testing.TB, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), live); err != nil {
		t.Fatalf("get %s: %v", object.IDOf(obj), err)
	}
	return live
}
