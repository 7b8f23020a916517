package object

import "k8s.io/apimachinery/pkg/runtime/schema"

// Order is where a kind goes in a sync: objects are applied in ascending
// Order and deleted in descending Order, so nothing is created before what
// it needs nor deleted while something that needs it still exists. It is
// the one order table of gitsync: the applier's stages and the pruner's
// deletion stages are both derived from it.
type Order int

const (
	// OrderDefinitions holds Namespaces, CRDs and APIServices: everything
	// else may need one to exist, and deleting one cascades to what is
	// inside it.
	OrderDefinitions Order = iota
	// OrderClusterSetup holds the cluster-wide classes and roles that
	// namespaced objects refer to by name (storage, ingress, priority,
	// runtime and gateway classes, cluster roles and their bindings).
	OrderClusterSetup
	// OrderCluster holds the other built-in cluster-scoped objects (webhook
	// configurations, persistent volumes...).
	OrderCluster
	// OrderNamespaced holds built-in namespaced objects.
	OrderNamespaced
	// OrderCustomResources holds objects of kinds not built into
	// Kubernetes (custom or aggregated resources): they may manage the
	// built-in objects, so they come after them and go before them.
	OrderCustomResources
)

var orderNames = [...]string{"definitions", "cluster setup", "cluster objects", "namespaced objects", "custom resources"}

func (o Order) String() string {
	if o < 0 || int(o) >= len(orderNames) {
		return "unknown"
	}
	return orderNames[o]
}

// Well-known kinds the order table and its users name.
var (
	CRDKind        = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
	NamespaceKind  = schema.GroupKind{Kind: "Namespace"}
	APIServiceKind = schema.GroupKind{Group: "apiregistration.k8s.io", Kind: "APIService"}
)

// orderByKind is the table: kinds with an Order of their own. Every other
// kind falls back to OrderCluster, OrderNamespaced or OrderCustomResources
// by its group and scope (OrderOf).
var orderByKind = map[schema.GroupKind]Order{
	CRDKind:        OrderDefinitions,
	NamespaceKind:  OrderDefinitions,
	APIServiceKind: OrderDefinitions,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                  OrderClusterSetup,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                     OrderClusterSetup,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:               OrderClusterSetup,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:              OrderClusterSetup,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                     OrderClusterSetup,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:        OrderClusterSetup,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: OrderClusterSetup,
	{Group: "gateway.networking.k8s.io", Kind: "GatewayClass"}:       OrderClusterSetup,
}

// builtinGroups are the API groups served by kube-apiserver itself.
var builtinGroups = map[string]bool{
	"": true, "apps": true, "batch": true, "autoscaling": true, "policy": true, "extensions": true,
	"admissionregistration.k8s.io": true, "apiextensions.k8s.io": true, "apiregistration.k8s.io": true,
	"authentication.k8s.io": true, "authorization.k8s.io": true, "certificates.k8s.io": true,
	"coordination.k8s.io": true, "discovery.k8s.io": true, "events.k8s.io": true,
	"flowcontrol.apiserver.k8s.io": true, "internal.apiserver.k8s.io": true,
	"networking.k8s.io": true, "node.k8s.io": true, "rbac.authorization.k8s.io": true,
	"resource.k8s.io": true, "scheduling.k8s.io": true, "storage.k8s.io": true,
	"storagemigration.k8s.io": true,
}

// OrderOf returns where id's kind goes: its entry in the table, else custom
// resources for a group kube-apiserver does not serve itself, else by
// scope (an empty namespace is cluster-scoped).
func OrderOf(id ID) Order {
	if o, ok := orderByKind[id.GroupKind()]; ok {
		return o
	}
	switch {
	case !builtinGroups[id.Group]:
		return OrderCustomResources
	case id.Namespace != "":
		return OrderNamespaced
	default:
		return OrderCluster
	}
}
