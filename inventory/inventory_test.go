package inventory

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/object"
)

func cm(ns, name string) object.ID { return object.ID{Kind: "ConfigMap", Namespace: ns, Name: name} }

func entry(id object.ID, uid string) Entry { return Entry{ID: id, UID: types.UID(uid), Version: "v1"} }

func TestNewSortsAndDeduplicates(t *testing.T) {
	got := New(
		entry(cm("b", "x"), "1"),
		entry(object.ID{Group: "apps", Kind: "Deployment", Namespace: "a", Name: "d"}, "2"),
		entry(cm("a", "x"), "3"),
		entry(cm("b", "x"), "4"), // same ID again: the later entry wins
	)
	want := []Entry{
		entry(cm("a", "x"), "3"),
		entry(cm("b", "x"), "4"),
		entry(object.ID{Group: "apps", Kind: "Deployment", Namespace: "a", Name: "d"}, "2"),
	}
	if diff := cmp.Diff(want, got.Entries); diff != "" {
		t.Errorf("New (-want +got):\n%s", diff)
	}
}

func TestInventoryQueries(t *testing.T) {
	old := New(entry(cm("ns", "a"), "ua"), entry(cm("ns", "b"), "ub"), entry(cm("ns", "c"), "uc"))
	desired := New(entry(cm("ns", "b"), "ub2"), entry(cm("ns", "d"), "ud"))

	if !old.Has(cm("ns", "a")) || old.Has(cm("ns", "d")) {
		t.Errorf("Has: got a=%v d=%v, want true false", old.Has(cm("ns", "a")), old.Has(cm("ns", "d")))
	}
	if got := old.UID(cm("ns", "c")); got != "uc" {
		t.Errorf("UID(c) = %q, want uc", got)
	}
	if got := old.UID(cm("ns", "zz")); got != "" {
		t.Errorf("UID(missing) = %q, want empty", got)
	}
	// b is in both (with another UID): not stale.
	if diff := cmp.Diff([]Entry{entry(cm("ns", "a"), "ua"), entry(cm("ns", "c"), "uc")}, old.Diff(desired)); diff != "" {
		t.Errorf("Diff (-want +got):\n%s", diff)
	}
	wantUnion := []Entry{entry(cm("ns", "a"), "ua"), entry(cm("ns", "b"), "ub2"), entry(cm("ns", "c"), "uc"), entry(cm("ns", "d"), "ud")}
	if diff := cmp.Diff(wantUnion, old.Union(desired).Entries); diff != "" {
		t.Errorf("Union (-want +got):\n%s", diff)
	}
	var none *Inventory
	if none.Len() != 0 || none.Has(cm("ns", "a")) || len(none.Diff(old)) != 0 || len(old.Diff(none)) != 3 {
		t.Errorf("a nil inventory must behave as an empty one")
	}
}

func TestOwnedBy(t *testing.T) {
	tests := []struct {
		name           string
		labels         map[string]string
		owner, ownerNS string
		want           bool
	}{
		{"exact", object.OwnerLabels("app", "team"), "app", "team", true},
		{"other name", object.OwnerLabels("other", "team"), "app", "team", false},
		{"other namespace", object.OwnerLabels("app", "x"), "app", "team", false},
		{"namespace label missing, empty owner namespace", map[string]string{v1.LabelName: "app"}, "app", "", false},
		{"empty owner namespace present", object.OwnerLabels("app", ""), "app", "", true},
		{"no labels, empty owner", nil, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := object.OwnedBy(tt.labels, tt.owner, tt.ownerNS); got != tt.want {
				t.Errorf("OwnedBy(%v, %q, %q) = %v, want %v", tt.labels, tt.owner, tt.ownerNS, got, tt.want)
			}
		})
	}
}
