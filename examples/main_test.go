package examples_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/internal/testenv"
	"gitsync.dev/gitsync/object"
	sourcerender "gitsync.dev/gitsync/source/render"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{}, &env))
}

// repoRoot is the checkout the examples live in: GitSync paths such as
// "examples/guestbook" are relative to it, exactly as in the example GitSyncs.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// render turns a repository path into objects with gitsync's own renderer.
func render(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	r, err := sourcerender.Render(context.Background(), repoRoot(t), path, sourcerender.DefaultOptions())
	if err != nil {
		t.Fatalf("render %s: %v", path, err)
	}
	if len(r.Objects) == 0 {
		t.Fatalf("render %s: no objects", path)
	}
	return r.Objects
}

// subjects lists "Kind/name" (or "Kind/namespace/name") of objs, sorted.
func subjects(objs []*unstructured.Unstructured) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = object.IDOf(o).String()
	}
	slices.Sort(out)
	return out
}

// wantSubjects fails unless objs are exactly want (in any order).
func wantSubjects(t *testing.T, objs []*unstructured.Unstructured, want ...string) {
	t.Helper()
	slices.Sort(want)
	if diff := cmp.Diff(want, subjects(objs)); diff != "" {
		t.Errorf("rendered objects (-want +got):\n%s", diff)
	}
}

// tryApply applies objs through cfg with gitsync's applier, namespaced
// objects without a namespace going to ns, and returns the change set.
func tryApply(t *testing.T, cfg *rest.Config, ns string, objs []*unstructured.Unstructured) *apply.ChangeSet {
	t.Helper()
	opts := apply.DefaultOptions()
	opts.DefaultNamespace = ns
	a, err := apply.New(cfg, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := a.Apply(ctx, objs)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return cs
}

// mustApply applies objs as an administrator and fails on any failed entry.
func mustApply(t *testing.T, ns string, objs []*unstructured.Unstructured) {
	t.Helper()
	cs := tryApply(t, env.Config, ns, objs)
	if err := cs.Err(); err != nil {
		t.Fatalf("apply: %v\n(%s)", err, cs.Summary())
	}
}

var crdOnce struct {
	sync.Once
	err error
}

// installGitSyncCRD applies the GitSync CRD (api/v1alpha1/crd, from which
// the chart's template is made) once per test binary, so example GitSyncs
// are validated and defaulted by the real schema.
func installGitSyncCRD(t *testing.T) {
	t.Helper()
	crdOnce.Do(func() {
		r, err := sourcerender.Render(context.Background(), repoRoot(t), "api/v1alpha1/crd", sourcerender.DefaultOptions())
		if err != nil {
			crdOnce.err = err
			return
		}
		a, err := apply.New(env.Config, nil, apply.DefaultOptions())
		if err != nil {
			crdOnce.err = err
			return
		}
		cs, err := a.Apply(context.Background(), r.Objects)
		if err == nil {
			err = cs.Err()
		}
		crdOnce.err = err
	})
	if crdOnce.err != nil {
		t.Fatalf("install GitSync CRD from api/v1alpha1/crd: %v", crdOnce.err)
	}
}

// get reads one object from the apiserver.
func get(t *testing.T, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatalf("get %s %s/%s: %v", gvk.Kind, ns, name, err)
	}
	return u
}

// field reads a nested field of u, failing the test when it is missing.
func field(t *testing.T, u *unstructured.Unstructured, path ...string) any {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if err != nil || !ok {
		t.Fatalf("%s %s: field %v missing (err %v)", u.GetKind(), u.GetName(), path, err)
	}
	return v
}

var (
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	serviceGVK    = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	configMapGVK  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	gitSyncGVK    = schema.GroupVersionKind{Group: "gitsync.dev", Version: "v1alpha1", Kind: "GitSync"}
)
