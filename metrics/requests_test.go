package metrics_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/metrics"
)

// TestAPIRequestsCounted: gitsync_api_requests_total tells watches, Lease
// traffic, access reviews, reads and writes apart, so an operator can see a
// converged agent send no reads or writes while informers re-open their
// watches, and a restarted one ask its authorizer without writing.
func TestAPIRequestsCounted(t *testing.T) {
	ns := env.Namespace(t)
	reg := prometheus.NewRegistry()
	cfg := rest.CopyConfig(env.Config)
	if err := metrics.CountAPIRequests(cfg, reg); err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	// Discovery (reads) first, so what follows is only the requests below.
	for _, gk := range []schema.GroupKind{{Kind: "ConfigMap"}, {Group: "coordination.k8s.io", Kind: "Lease"}, {Group: "authorization.k8s.io", Kind: "SelfSubjectAccessReview"}} {
		if _, err := c.RESTMapper().RESTMapping(gk); err != nil {
			t.Fatal(err)
		}
	}
	before := apiRequests(t, reg)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "counted", Namespace: ns}}
	if err := c.Create(ctx, cm); err != nil { // write
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil { // read
		t.Fatal(err)
	}
	if err := c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)); err != nil { // read
		t.Fatal(err)
	}
	w, err := c.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)) // watch
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "counted", Namespace: ns}}
	if err := c.Create(ctx, lease); err != nil { // lease
		t.Fatal(err)
	}
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "configmaps", Namespace: ns},
	}}
	if err := c.Create(ctx, ssar); err != nil { // review
		t.Fatal(err)
	}
	got := apiRequests(t, reg)
	for k, n := range before {
		got[k] -= n
	}
	want := map[string]float64{"write": 1, "read": 2, "watch": 1, "lease": 1, "review": 1}
	for kind, n := range want {
		if got[kind] != n {
			t.Errorf("gitsync_api_requests_total{kind=%q} = %v, want %v (all: %v)", kind, got[kind], n, got)
		}
	}
}

// apiRequests reads gitsync_api_requests_total by kind.
func apiRequests(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	got := map[string]float64{}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "gitsync_api_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" {
					got[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return got
}
