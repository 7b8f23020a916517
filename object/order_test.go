package object

import "testing"

func TestOrderOf(t *testing.T) {
	tests := []struct {
		name string
		id   ID
		want Order
	}{
		{"namespace", ID{Kind: "Namespace", Name: "ns"}, OrderDefinitions},
		{"crd", ID{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}, OrderDefinitions},
		{"apiservice", ID{Group: "apiregistration.k8s.io", Kind: "APIService", Name: "v1.example.com"}, OrderDefinitions},
		{"cluster role", ID{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "r"}, OrderClusterSetup},
		{"gateway class, though not built in", ID{Group: "gateway.networking.k8s.io", Kind: "GatewayClass", Name: "g"}, OrderClusterSetup},
		{"webhook configuration", ID{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration", Name: "w"}, OrderCluster},
		{"persistent volume", ID{Kind: "PersistentVolume", Name: "pv"}, OrderCluster},
		{"config map", ID{Kind: "ConfigMap", Namespace: "ns", Name: "c"}, OrderNamespaced},
		{"role", ID{Group: "rbac.authorization.k8s.io", Kind: "Role", Namespace: "ns", Name: "r"}, OrderNamespaced},
		{"namespaced custom resource", ID{Group: "example.com", Kind: "Widget", Namespace: "ns", Name: "w"}, OrderCustomResources},
		{"cluster custom resource", ID{Group: "example.com", Kind: "ClusterWidget", Name: "w"}, OrderCustomResources},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OrderOf(tt.id); got != tt.want {
				t.Errorf("OrderOf(%s) = %s, want %s", tt.id, got, tt.want)
			}
		})
	}
}
