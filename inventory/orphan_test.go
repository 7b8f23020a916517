package inventory

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/object"
)

// TestOrphan: our objects lose the owner labels (and keep everything else);
// objects someone else took over or recreated are untouched.
func TestOrphan(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	labels := object.OwnerLabels(owner, ns)
	labels["team"] = "web"
	mine := createCM(t, ns, "mine", labels, nil)
	taken := createCM(t, ns, "taken", object.OwnerLabels("other-app", ns), nil)
	recreated := ours(t, ns, "recreated")
	if err := env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metaOf(recreated)}); err != nil {
		t.Fatal(err)
	}
	newer := ours(t, ns, "recreated")
	missing := Entry{ID: cm(ns, "missing"), UID: "0000", Version: "v1"}

	res, err := Orphan(ctx, env.Client, New(mine, taken, recreated, missing), owner, ns)
	if err != nil {
		t.Fatalf("Orphan: %v", err)
	}
	want := map[string]Action{
		mine.ID.String():      ActionOrphaned,
		taken.ID.String():     ActionKept,
		recreated.ID.String(): ActionKept,
		missing.ID.String():   ActionAbsent,
	}
	if diff := cmp.Diff(want, actions(res)); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if res.Remaining.Len() != 0 {
		t.Errorf("Remaining = %v, want empty", res.Remaining.Entries)
	}
	for e, wantLabels := range map[Entry]map[string]string{
		mine:  {"team": "web"},
		taken: object.OwnerLabels("other-app", ns),
		newer: object.OwnerLabels(owner, ns),
	} {
		obj := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: e.ID.Name}, obj); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantLabels, obj.Labels); diff != "" {
			t.Errorf("labels of %s (-want +got):\n%s", e.ID, diff)
		}
	}
}
