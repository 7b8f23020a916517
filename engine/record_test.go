package engine

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/object"
)

func configMap(name string, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetAnnotations(annotations)
	return u
}

func TestAppliedInventory(t *testing.T) {
	id := func(name string) object.ID {
		return object.ID{Kind: "ConfigMap", Namespace: "ns", Name: name}
	}
	desired := []*unstructured.Unstructured{
		configMap("created", nil),
		configMap("unchanged", map[string]string{v1.AnnotationPrune: "enabled"}),
		configMap("prune-disabled", map[string]string{v1.AnnotationPrune: v1.PruneDisabled}),
		configMap("failed-with-uid", nil),
		configMap("skipped", nil),
	}
	cs := &apply.ChangeSet{}
	cs.Add(apply.Entry{ID: id("created"), Action: apply.Created, UID: "u1"})
	cs.Add(apply.Entry{ID: id("unchanged"), Action: apply.Unchanged, UID: "u2"})
	cs.Add(apply.Entry{ID: id("prune-disabled"), Action: apply.Configured, UID: "u3"})
	cs.Add(apply.Entry{ID: id("failed-with-uid"), Action: apply.Failed, UID: "u4", Err: errors.New("boom")})
	cs.Add(apply.Entry{ID: id("skipped"), Action: apply.Skipped})
	got := appliedInventory(desired, cs)
	want := []inventory.Entry{
		{ID: id("created"), UID: types.UID("u1"), Version: "v1"},
		{ID: id("unchanged"), UID: types.UID("u2"), Version: "v1"},
	}
	if diff := cmp.Diff(want, got.Entries); diff != "" {
		t.Errorf("appliedInventory (-want +got):\n%s", diff)
	}
}
