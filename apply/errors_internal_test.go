package apply

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestExplain: the apiserver's refusals are told in field paths, expected
// types and plain words, never as Go values or CEL conversion notes.
func TestExplain(t *testing.T) {
	gk := schema.GroupKind{Group: "gitsync.dev", Kind: "GitSync"}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{
			name: "server-side apply type error",
			err:  apierrors.NewBadRequest(`failed to create typed patch object (ns/a; /v1, Kind=ConfigMap): .data.k: expected string, got &value.valueUnstructured{Value:1}`),
			want: "invalid: .data.k: expected string, got number",
		},
		{
			name: "several type errors on one line",
			err: apierrors.NewBadRequest("failed to create typed patch object (ns/a; apps/v1, Kind=Deployment): errors:\n" +
				"  .spec.replicas: expected numeric (int or float), got string\n" +
				"  .spec.template.metadata.labels: expected map, got &value.valueUnstructured{Value:[]interface {}{\"x\"}}"),
			want: "invalid: .spec.replicas: expected numeric (int or float), got string; .spec.template.metadata.labels: expected map, got list",
		},
		{
			name: "duration without unit: no pattern, no CEL conversion note",
			err: apierrors.NewInvalid(gk, "g", field.ErrorList{
				field.Invalid(field.NewPath("spec", "interval"), "5", `spec.interval in body should match '^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$'`),
				field.Invalid(field.NewPath("spec", "interval"), "string", "type conversion error from 'string' to 'google.protobuf.Duration' evaluating rule: interval must be between 1s and 24h"),
			}),
			want: `invalid: spec.interval: "5" is not a duration such as 30s, 5m or 1h30m`,
		},
		{
			name: "namespace that does not exist",
			err:  apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "guestbook"),
			want: "namespace guestbook does not exist",
		},
		{
			name: "another object not found is left as it is",
			err:  apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "guestbook"),
			want: `configmaps "guestbook" not found`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := explain(tt.err, "guestbook")
			if d := cmp.Diff(tt.want, got.Error()); d != "" {
				t.Errorf("message (-want +got):\n%s", d)
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("%T does not unwrap to the apiserver's error", got)
			}
		})
	}
}

// TestAsImmutableNeedsEveryCause: a refusal with an invalid value next to an
// immutable field is not recreated (the create after the delete would fail).
func TestAsImmutableNeedsEveryCause(t *testing.T) {
	gk := schema.GroupKind{Kind: "Service"}
	only := apierrors.NewInvalid(gk, "web", field.ErrorList{
		field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), []string{"None"}, "may not change once set"),
	})
	if ie := asImmutable(only); ie == nil || !cmp.Equal(ie.Fields, []string{"spec.clusterIPs[0]"}) {
		t.Errorf("asImmutable(%v) = %v, want spec.clusterIPs[0]", only, ie)
	}
	mixed := apierrors.NewInvalid(gk, "web", field.ErrorList{
		field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), []string{"None"}, "may not change once set"),
		field.NotSupported(field.NewPath("spec", "type"), "Bogus", []string{"ClusterIP"}),
	})
	if ie := asImmutable(mixed); ie != nil {
		t.Errorf("asImmutable(%v) = %v, want nil", mixed, ie)
	}
}
