package drift

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

func TestParsePointer(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "/spec/replicas", want: []string{"spec", "replicas"}},
		{in: "/metadata/annotations/example.com~1injected", want: []string{"metadata", "annotations", "example.com/injected"}},
		{in: "/a~0b", want: []string{"a~b"}},
		{in: "/webhooks/*/clientConfig/caBundle", want: []string{"webhooks", "*", "clientConfig", "caBundle"}},
		{in: "", wantErr: true},
		{in: "spec/replicas", wantErr: true},
		{in: "/a~2", wantErr: true},
		{in: "/metadata", wantErr: true},
		{in: "/metadata/name", wantErr: true},
		{in: "/kind", wantErr: true},
		{in: "/metadata/labels", wantErr: true},
		{in: "/metadata/labels/gitsync.dev~1name", wantErr: true},
		{in: "/metadata/annotations/gitsync.dev~1apply", wantErr: true},
		{in: "/metadata/labels/app", want: []string{"metadata", "labels", "app"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := ParsePointer(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if d := cmp.Diff(tt.want, p.tokens); !tt.wantErr && d != "" {
				t.Errorf("tokens (-want +got):\n%s", d)
			}
		})
	}
}

func TestTargetMatches(t *testing.T) {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("apps/v1")
	obj.SetKind("Deployment")
	obj.SetNamespace("prod")
	obj.SetName("web")
	obj.SetLabels(map[string]string{"app": "web"})
	tests := []struct {
		name     string
		target   Target
		selector string
		want     bool
	}{
		{name: "empty", want: true},
		{name: "kind and group", target: Target{Group: "apps", Kind: "Deployment"}, want: true},
		{name: "other group", target: Target{Group: "batch", Kind: "Deployment"}, want: false},
		{name: "other version", target: Target{Version: "v1beta1"}, want: false},
		{name: "other name", target: Target{Name: "api"}, want: false},
		{name: "namespace", target: Target{Namespace: "prod"}, want: true},
		{name: "labels", selector: "app=web", want: true},
		{name: "other labels", selector: "app!=web", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRule("r", tt.target, tt.selector, []string{"/spec"})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Target.Matches(obj); got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
}

// owned parses a FieldsV1 document.
func owned(t *testing.T, fieldsV1 string) *fieldpath.Set {
	t.Helper()
	s := &fieldpath.Set{}
	if err := s.FromJSON(bytes.NewReader([]byte(fieldsV1))); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOmit(t *testing.T) {
	desired := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "X", "metadata": map[string]any{"name": "x"},
			"spec": map[string]any{"replicas": int64(2), "containers": []any{
				map[string]any{"name": "a", "image": "a:1"},
				map[string]any{"name": "b", "image": "b:1"},
			}},
		}}
	}
	live := desired()
	live.Object["spec"].(map[string]any)["replicas"] = int64(5)
	live.Object["spec"].(map[string]any)["containers"].([]any)[1].(map[string]any)["image"] = "b:injected"
	byKey := owned(t, `{"f:spec":{"f:replicas":{},"f:containers":{"k:{\"name\":\"b\"}":{".":{},"f:image":{}}}}}`)
	tests := []struct {
		name     string
		paths    []string
		live     *unstructured.Unstructured
		owned    *fieldpath.Set
		wantSpec map[string]any
		wantHow  []How
	}{
		{name: "create keeps Git's value", paths: []string{"/spec/replicas"}, live: nil,
			wantSpec: desired().Object["spec"].(map[string]any), wantHow: []How{Created}},
		{name: "owned field keeps the live value", paths: []string{"/spec/replicas"}, live: live, owned: byKey,
			wantSpec: map[string]any{"replicas": int64(5), "containers": desired().Object["spec"].(map[string]any)["containers"]}, wantHow: []How{KeptLive}},
		{name: "field of another manager is left out", paths: []string{"/spec/replicas"}, live: live, owned: owned(t, `{"f:spec":{}}`),
			wantSpec: map[string]any{"containers": desired().Object["spec"].(map[string]any)["containers"]}, wantHow: []How{Released}},
		{name: "list element by key", paths: []string{"/spec/containers/*/image"}, live: live, owned: byKey,
			wantSpec: map[string]any{"replicas": int64(2), "containers": []any{
				map[string]any{"name": "a"},
				map[string]any{"name": "b", "image": "b:injected"},
			}}, wantHow: []How{Released, KeptLive}},
		{name: "absent field names nothing", paths: []string{"/spec/paused"}, live: live, owned: byKey,
			wantSpec: desired().Object["spec"].(map[string]any)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRule("spec.drift.ignore[0]", Target{}, "", tt.paths)
			if err != nil {
				t.Fatal(err)
			}
			in := desired()
			got, skips := Rules{r}.Omit(in, tt.live, tt.owned)
			if d := cmp.Diff(tt.wantSpec, got.Object["spec"]); d != "" {
				t.Errorf("spec (-want +got):\n%s", d)
			}
			var hows []How
			for _, s := range skips {
				hows = append(hows, s.How)
			}
			if d := cmp.Diff(tt.wantHow, hows); d != "" {
				t.Errorf("hows (-want +got):\n%s", d)
			}
			if d := cmp.Diff(desired().Object, in.Object); d != "" {
				t.Errorf("Omit changed its input (-want +got):\n%s", d)
			}
		})
	}
}

func TestPolicyOf(t *testing.T) {
	for in, want := range map[string]Policy{"create-only": CreateOnly, "disabled": Disabled} {
		if got, err := PolicyOf(map[string]string{"gitsync.dev/apply": in}); err != nil || got != want {
			t.Errorf("PolicyOf(%q) = %q, %v", in, got, err)
		}
	}
	if got, err := PolicyOf(nil); err != nil || got != Apply {
		t.Errorf("PolicyOf(nil) = %q, %v", got, err)
	}
	if _, err := PolicyOf(map[string]string{"gitsync.dev/apply": "IfNotPresent"}); err == nil {
		t.Error("an unknown value is an error")
	}
}
