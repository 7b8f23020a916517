package apply_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/internal/testenv"
	"gitsync.dev/gitsync/object"
)

// TestAdoptionThroughManagedOnlyCache: with a cache that holds only objects
// carrying the owner label (as the agent's does), an existing unlabelled
// object looks missing; the apply adopts it (stamps the owner labels) and
// reports it configured, not created, without any extra request.
func TestAdoptionThroughManagedOnlyCache(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	count := &testenv.RequestCounter{}
	cfg := count.Wrap(env.Config)
	req, err := labels.NewRequirement(v1.LabelName, selection.Exists, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(cfg, cache.Options{DefaultLabelSelector: labels.NewSelector().Add(*req)})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go func() { _ = c.Start(cctx) }()
	if !c.WaitForCacheSync(cctx) {
		t.Fatal("cache did not sync")
	}
	opts := apply.DefaultOptions()
	opts.OwnerLabels = object.OwnerLabels("app", "gitsync-system")
	a, err := apply.New(cfg, c, opts)
	if err != nil {
		t.Fatal(err)
	}

	// Created by hand: same value (no conflict), and a kubectl edit that
	// gitsync takes back.
	same, edited := cm(t, ns, "same", map[string]string{"a": "1"}), cm(t, ns, "edited", map[string]string{"a": "theirs"})
	if err := env.Client.Create(ctx, same.DeepCopy(), client.FieldOwner("kubectl-create")); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, edited.DeepCopy(), client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	fresh := cm(t, ns, "fresh", map[string]string{"a": "1"})
	edited = cm(t, ns, "edited", map[string]string{"a": "1"})

	count.Reset()
	cs, err := a.Apply(ctx, []*unstructured.Unstructured{same, edited, fresh})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]apply.Action{
		"ConfigMap/" + ns + "/same":   apply.Configured,
		"ConfigMap/" + ns + "/edited": apply.Configured,
		"ConfigMap/" + ns + "/fresh":  apply.Created,
	}
	if d := cmp.Diff(want, actions(cs)); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	for _, o := range []*unstructured.Unstructured{same, edited, fresh} {
		if l := getLive(t, o).GetLabels(); !object.OwnedBy(l, "app", "gitsync-system") {
			t.Errorf("%s labels = %v, want owner labels", o.GetName(), l)
		}
	}
	// One apply each, plus the forced retry of the taken-back edit.
	if n := count.Mutating(); n != 4 {
		t.Errorf("%d writes, want 4:\n%s", n, testenv.JoinRequests(count.Requests()))
	}
}
