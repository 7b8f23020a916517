package object

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestKeyRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		id   ID
		key  string
	}{
		{"namespaced core", ID{Kind: "ConfigMap", Namespace: "prod", Name: "web"}, "prod_web__ConfigMap"},
		{"namespaced group", ID{Group: "apps", Kind: "Deployment", Namespace: "prod", Name: "web"}, "prod_web_apps_Deployment"},
		{"cluster-scoped", ID{Kind: "Namespace", Name: "prod"}, "_prod__Namespace"},
		{"cluster-scoped group", ID{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:reader"}, "_system:reader_rbac.authorization.k8s.io_ClusterRole"},
		{"underscore in name", ID{Group: "rbac.authorization.k8s.io", Kind: "Role", Namespace: "a", Name: "my_role__x"}, "a_my_role__x_rbac.authorization.k8s.io_Role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.id.Key(); got != tt.key {
				t.Errorf("Key() = %q, want %q", got, tt.key)
			}
			got, err := ParseKey(tt.key)
			if err != nil {
				t.Fatalf("ParseKey(%q): %v", tt.key, err)
			}
			if diff := cmp.Diff(tt.id, got); diff != "" {
				t.Errorf("ParseKey(%q) (-want +got):\n%s", tt.key, diff)
			}
		})
	}
}

func TestParseKeyRejects(t *testing.T) {
	for _, key := range []string{"", "a_b_c", "ns__apps_Deployment", "ns_name_apps_", "plain"} {
		if id, err := ParseKey(key); err == nil {
			t.Errorf("ParseKey(%q) = %+v, want an error", key, id)
		}
	}
}

func TestStringSubject(t *testing.T) {
	tests := []struct {
		id   ID
		want string
	}{
		{ID{Group: "apps", Kind: "Deployment", Namespace: "prod", Name: "web"}, "Deployment/prod/web"},
		{ID{Kind: "Namespace", Name: "prod"}, "Namespace/prod"},
		{ID{Group: "cert-manager.io", Kind: "Certificate", Namespace: "x", Name: "c"}, "Certificate.cert-manager.io/x/c"},
	}
	for _, tt := range tests {
		if got := tt.id.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.id, got, tt.want)
		}
	}
}
