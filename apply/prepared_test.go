package apply_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/object"
)

// TestPrepared: Prepared returns the objects as Apply sends them, writing
// nothing: a namespaced object without a namespace gets the default one, a
// cluster-scoped object loses the one it names, a custom resource whose
// CRD is in the set takes the CRD's scope, an unknown kind keeps its
// namespace; every copy carries the owner labels over its own, and the
// objects given are not changed.
//
// Checked: with Prepared returning plain copies, every case fails.
func TestPrepared(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	owner := object.CLIOwner(ns, "web").Labels()
	f := newFixture(t, apply.Options{DefaultNamespace: ns, OwnerLabels: owner})
	objs := []*unstructured.Unstructured{
		obj(t, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  labels: {app: web}\n"),
		obj(t, ns, "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: NS-reader\n  namespace: elsewhere\n"),
		obj(t, ns, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.NS.test\nspec:\n"+
			"  group: NS.test\n  scope: Namespaced\n  names: {kind: Widget, plural: widgets}\n  versions: [{name: v1, served: true, storage: true}]\n"),
		obj(t, ns, "apiVersion: NS.test/v1\nkind: Widget\nmetadata:\n  name: w\n"),
		obj(t, ns, "apiVersion: unknown.NS.test/v1\nkind: Gadget\nmetadata:\n  name: g\n  namespace: kept\n"),
	}
	before := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		before[i] = o.DeepCopy()
	}
	got := f.applier.Prepared(objs)
	wantNamespaces := []string{ns, "", "", ns, "kept"}
	for i, o := range got {
		id := object.IDOf(o)
		if o.GetNamespace() != wantNamespaces[i] {
			t.Errorf("%s: namespace %q, want %q", id, o.GetNamespace(), wantNamespaces[i])
		}
		for k, v := range owner {
			if o.GetLabels()[k] != v {
				t.Errorf("%s: label %s=%q, want %q", id, k, o.GetLabels()[k], v)
			}
		}
		if d := cmp.Diff(before[i].Object, objs[i].Object); d != "" {
			t.Errorf("%s: the given object changed (-before +after):\n%s", id, d)
		}
	}
	if got[0].GetLabels()["app"] != "web" {
		t.Errorf("ConfigMap/plain lost its own label app: %v", got[0].GetLabels())
	}
}
