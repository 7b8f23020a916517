package apply

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestExistedBefore(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	entry := func(manager string, at time.Time) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, Time: &metav1.Time{Time: at}}
	}
	tests := []struct {
		name       string
		generation int64
		entries    []metav1.ManagedFieldsEntry
		want       bool
	}{
		{name: "created by this apply", entries: []metav1.ManagedFieldsEntry{entry("gitsync", created)}},
		{name: "created across a second boundary", generation: 1, entries: []metav1.ManagedFieldsEntry{entry("gitsync", created.Add(time.Second))}},
		{name: "another manager owns fields", entries: []metav1.ManagedFieldsEntry{entry("kubectl-create", created), entry("gitsync", created)}, want: true},
		{name: "generation moved on", generation: 2, entries: []metav1.ManagedFieldsEntry{entry("gitsync", created)}, want: true},
		{name: "our entry younger than the object", entries: []metav1.ManagedFieldsEntry{entry("gitsync", created.Add(2*time.Second))}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			u.SetCreationTimestamp(metav1.Time{Time: created})
			u.SetGeneration(tt.generation)
			u.SetManagedFields(tt.entries)
			if got := existedBefore(u, "gitsync"); got != tt.want {
				t.Errorf("existedBefore = %t, want %t", got, tt.want)
			}
		})
	}
	if existedBefore(nil, "gitsync") {
		t.Error("existedBefore(nil) = true")
	}
}
