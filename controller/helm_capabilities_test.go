package controller_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/helm"
)

// capabilitiesChart is a chart that renders a Widget only where its CRD is
// served, as charts gate a ServiceMonitor, and records the Kubernetes
// version its templates see.
func capabilitiesChart(group string) map[string]string {
	return map[string]string{
		"deploy/Chart.yaml": "apiVersion: v2\nname: gated\nversion: 0.1.0\n",
		"deploy/templates/caps.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caps\ndata:\n" +
			"  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n",
		"deploy/templates/widget.yaml": "{{- if .Capabilities.APIVersions.Has \"" + group + "/v1/Widget\" }}\n" +
			"apiVersion: " + group + "/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 1\n{{- end }}\n",
	}
}

// TestHelmCapabilities: a chart renders with the target cluster's version
// and served APIs, not Helm's defaults. The gated Widget is left out while
// its CRD is not served; once the CRD is created (out of band, with an
// hour-long interval: only the CRD watch can wake the GitSync), the chart
// renders again and the Widget is applied, without a new commit.
// Checked by rendering with Helm's defaults (no capabilities in
// getCapped): the ConfigMap says v1.37.0 and the Widget never appears;
// and by not requeueing on the change: the Widget never appears.
func TestHelmCapabilities(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	startAgent(t, agentOptions{namespace: ns})
	group := rand.String(6) + ".example.com"
	r := newRepo(t)
	r.commit(capabilitiesChart(group))
	gs := newGitSync(ns, "gated", r.url(), func(g *v1.GitSync) {
		g.Spec.Interval = metav1.Duration{Duration: time.Hour}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	got := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	if n := len(got.Status.Inventory.Entries); n != 1 {
		t.Errorf("inventory before the CRD: %d entries, want 1 (the ConfigMap only): %+v", n, got.Status.Inventory.Entries)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	cm, err := getCM(t, c, ns, "caps")
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["kube"] != v.GitVersion || v.GitVersion == helm.DefaultKubeVersion {
		t.Errorf(".Capabilities.KubeVersion.Version = %q, want the cluster's %q", cm.Data["kube"], v.GitVersion)
	}

	createCRD(t, c, testCRD(group, "Widget"))
	widget := &unstructured.Unstructured{}
	widget.SetAPIVersion(group + "/v1")
	widget.SetKind("Widget")
	eventually(t, "gated Widget applied once its CRD is served", func(ctx context.Context) (bool, error) {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w"}, widget) == nil, nil
	})
	got = waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return len(g.Status.Inventory.Entries) == 2
	})
	if got.Status.LastAppliedRevision != got.Status.LastAttemptedRevision {
		t.Errorf("revisions %q / %q: the same commit, rendered again", got.Status.LastAppliedRevision, got.Status.LastAttemptedRevision)
	}
}
