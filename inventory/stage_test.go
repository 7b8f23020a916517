package inventory

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/object"
)

func TestStageOf(t *testing.T) {
	tests := []struct {
		id   object.ID
		want Stage
	}{
		{object.ID{Group: "example.com", Kind: "Widget", Namespace: "ns", Name: "w"}, StageCustomResources},
		{object.ID{Group: "example.com", Kind: "ClusterWidget", Name: "w"}, StageCustomResources},
		{object.ID{Group: "gateway.networking.k8s.io", Kind: "Gateway", Namespace: "ns", Name: "g"}, StageCustomResources},
		{object.ID{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "d"}, StageNamespaced},
		{object.ID{Kind: "ConfigMap", Namespace: "ns", Name: "c"}, StageNamespaced},
		{object.ID{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "r"}, StageCluster},
		{object.ID{Group: "storage.k8s.io", Kind: "StorageClass", Name: "fast"}, StageCluster},
		{object.ID{Kind: "Namespace", Name: "ns"}, StageDefinitions},
		{object.ID{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}, StageDefinitions},
		{object.ID{Group: "apiregistration.k8s.io", Kind: "APIService", Name: "v1.example.com"}, StageDefinitions},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			if got := StageOf(tt.id); got != tt.want {
				t.Errorf("StageOf(%s) = %s, want %s", tt.id, got, tt.want)
			}
		})
	}
}

// TestPlanOrdering: deletions run custom resources first, CRDs and
// Namespaces last, and in ID order within a stage, whatever the input order.
func TestPlanOrdering(t *testing.T) {
	ids := []object.ID{
		{Kind: "Namespace", Name: "app"},
		{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"},
		{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "app"},
		{Kind: "ConfigMap", Namespace: "app", Name: "b"},
		{Group: "apps", Kind: "Deployment", Namespace: "app", Name: "web"},
		{Kind: "ConfigMap", Namespace: "app", Name: "a"},
		{Group: "example.com", Kind: "Widget", Namespace: "app", Name: "w"},
	}
	ds := make([]Deletion, len(ids))
	for i, id := range ids {
		ds[i] = Deletion{ID: id, Stage: StageOf(id)}
	}
	sortDeletions(ds)
	got := make([]string, len(ds))
	for i, d := range ds {
		got[i] = fmt.Sprintf("%d %s", d.Stage, d.ID)
	}
	want := []string{
		"0 Widget.example.com/app/w",
		"1 ConfigMap/app/a",
		"1 ConfigMap/app/b",
		"1 Deployment/app/web",
		"2 ClusterRole/app",
		"3 Namespace/app",
		"3 CustomResourceDefinition/widgets.example.com",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deletion order (-want +got):\n%s", diff)
	}
	p := &PrunePlan{Deletions: ds}
	var stages []int
	for _, s := range p.stages() {
		stages = append(stages, len(s))
	}
	if diff := cmp.Diff([]int{1, 3, 1, 2}, stages); diff != "" {
		t.Errorf("stage sizes (-want +got):\n%s", diff)
	}
}

func TestCheckRails(t *testing.T) {
	inv := func(n int) *Inventory {
		es := make([]Entry, n)
		for i := range es {
			es[i] = entry(cm("ns", fmt.Sprintf("c%02d", i)), fmt.Sprint(i))
		}
		return New(es...)
	}
	ten := inv(10)
	tests := []struct {
		name    string
		desired *Inventory
		opts    func(*PruneOptions)
		want    error
	}{
		{"sync failed", inv(9), func(o *PruneOptions) { o.SyncSucceeded = false }, ErrSyncIncomplete},
		{"one of ten stale", inv(9), nil, nil},
		{"half stale is at the limit", inv(5), nil, nil},
		{"six of ten stale, minimum count off", inv(4), func(o *PruneOptions) { o.MaxShareMinStale = 0 }, ErrPruneLimit},
		{"six of ten stale, under the default minimum count", inv(4), nil, nil},
		{"six of ten stale, over a minimum count of five", inv(4), func(o *PruneOptions) { o.MaxShareMinStale = 5 }, ErrPruneLimit},
		{"six of ten with limit off", inv(4), func(o *PruneOptions) { o.MaxShare = 0 }, nil},
		{"empty render", New(), nil, ErrEmptyDesired},
		{"empty render allowed ignores the share", New(), func(o *PruneOptions) { o.AllowEmpty = true }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultPruneOptions()
			opts.SyncSucceeded = true
			if tt.opts != nil {
				tt.opts(&opts)
			}
			err := checkRails(len(ten.Diff(tt.desired)), ten, tt.desired, opts)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("checkRails = %v, want %v", err, tt.want)
			}
			var refused *RefusedError
			if tt.want != nil {
				if !errors.As(err, &refused) {
					t.Fatalf("error %T is not a *RefusedError", err)
				}
				if refused.Total != 10 || refused.Stale != 10-tt.desired.Len() || refused.Keep.Len() != 10 {
					t.Errorf("RefusedError counts: stale %d total %d keep %d, want %d 10 10", refused.Stale, refused.Total, refused.Keep.Len(), 10-tt.desired.Len())
				}
			}
		})
	}
}
