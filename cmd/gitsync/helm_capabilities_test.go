package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/cluster"
	"gitsync.dev/gitsync/source/helm"
)

// TestHelmCapabilitiesOfTheCluster: diff and apply render a chart with the
// cluster's version and served APIs, as `helm install` would there: the
// Widget the chart gates on its CRD is left out until the CRD is served,
// then diff shows it and apply creates it; the ConfigMap records the
// cluster's version. Checked by rendering without
// the cluster's capabilities (no useTarget hook): the ConfigMap says
// v1.37.0 and the Widget never appears.
func TestHelmCapabilitiesOfTheCluster(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	ctx := context.Background()
	group := rand.String(6) + ".example.com"
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	writeFiles(t, dir, map[string]string{
		"chart/Chart.yaml": "apiVersion: v2\nname: gated\nversion: 0.1.0\n",
		"chart/templates/caps.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caps\ndata:\n" +
			"  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n",
		"chart/templates/widget.yaml": "{{- if .Capabilities.APIVersions.Has \"" + group + "/v1/Widget\" }}\n" +
			"apiVersion: " + group + "/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 1\n{{- end }}\n",
	})
	chart := filepath.Join(dir, "chart")
	changes := func(r result) []string {
		got := changeLines(r.stdout)
		slices.Sort(got)
		return got
	}

	r := gitsyncIn(t, ns, "diff", chart, "--name", "gated")
	wantCode(t, r, 1)
	if diff := cmp.Diff([]string{"+ ConfigMap/" + ns + "/caps (create)"}, changes(r)); diff != "" {
		t.Errorf("diff before the CRD (-want +got):\n%s\n%s", diff, r)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, gitsyncIn(t, ns, "apply", chart, "--name", "gated"), 0)
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "caps"}, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["kube"] != v.GitVersion || v.GitVersion == helm.DefaultKubeVersion {
		t.Errorf(".Capabilities.KubeVersion.Version = %q, want the cluster's %q", cm.Data["kube"], v.GitVersion)
	}

	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	if err := env.Client.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), crd) })
	served := func(ctx context.Context) (bool, error) {
		caps, err := cluster.ReadCapabilities(ctx, dc)
		return err == nil && slices.Contains(caps.APIVersions, group+"/v1/Widget"), nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, served); err != nil {
		t.Fatalf("Widget not in discovery: %v", err)
	}

	r = gitsyncIn(t, ns, "diff", chart, "--name", "gated")
	wantCode(t, r, 1)
	want := []string{"+ Widget." + group + "/" + ns + "/w (create)"}
	if diff := cmp.Diff(want, changes(r)); diff != "" {
		t.Errorf("diff once the CRD is served (-want +got):\n%s\n%s", diff, r)
	}
	r = gitsyncIn(t, ns, "apply", chart, "--name", "gated")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "1 created") {
		t.Errorf("apply once the CRD is served: want the Widget created:\n%s", r)
	}
}
