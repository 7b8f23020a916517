package chart_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "gitsync.dev/gitsync/api/v1alpha1"
)

const crdName = "gitsyncs.gitsync.dev"

// TestCRDTemplateMatchesAPI: the chart's CRD template is the CRD the agent
// embeds (api/v1alpha1/crd, what `gitsync run --install-crds` applies), plus
// the keep policy and the release's labels: `make generate` keeps them in step.
func TestCRDTemplateMatchesAPI(t *testing.T) {
	var got *unstructured.Unstructured
	for _, o := range template(t, "gs", "gitsync-system") {
		if o.GetKind() == "CustomResourceDefinition" {
			got = o
		}
	}
	if got == nil {
		t.Fatal("the chart renders no CRD by default")
	}
	if p := got.GetAnnotations()["helm.sh/resource-policy"]; p != "keep" {
		t.Errorf("CRD annotation helm.sh/resource-policy = %q, want keep (uninstall must not delete every GitSync)", p)
	}
	if v := got.GetLabels()["helm.sh/chart"]; v != "gitsync-0.2.0" {
		t.Errorf("CRD label helm.sh/chart = %q, want the chart's", v)
	}
	api, err := v1alpha1.CRD()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(asJSON(t, api.Spec), asJSON(t, got.Object["spec"])); diff != "" {
		t.Errorf("chart CRD spec differs from api/v1alpha1/crd (run make generate) (-api +chart):\n%s", diff)
	}

	if objs := template(t, "gs", "gitsync-system", "--set", "crds.install=false"); slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "CustomResourceDefinition"
	}) {
		t.Error("crds.install=false still renders the CRD")
	}
}

// TestHelmLifecycle runs the real helm against the apiserver: install a
// release laid out like chart 0.1.0 (CRD in crds/, outside the release),
// upgrade to this chart, upgrade again with a changed CRD, uninstall. The
// CRD follows every upgrade and outlives the uninstall, with its GitSyncs.
func TestHelmLifecycle(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	deleteCRD(t) // the package's other tests may have created it without Helm
	t.Cleanup(func() {
		// Leave the CRD as the other tests expect it: theirs, not release life's.
		deleteCRD(t)
		ensureCRD(t)
	})

	kube := []string{"--kubeconfig", env.Kubeconfig, "-n", ns}
	run := func(args ...string) string {
		t.Helper()
		out, err := helm(t, append(args, kube...)...)
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, lines(out))
		}
		return out
	}

	// Helm maps every object before it creates any: GitSyncs from values
	// cannot come with the install that creates their CRD (docs/operations/install.md).
	out, err := helm(t, append([]string{"install", "first", ".",
		"--set", "gitSyncs[0].name=x,gitSyncs[0].spec.source.url=https://example.com/r.git"}, kube...)...)
	if err == nil || !strings.Contains(out, "ensure CRDs are installed first") {
		t.Errorf("first install with gitSyncs: err %v, want helm's \"ensure CRDs are installed first\" (else update docs/operations/install.md):\n%s", err, lines(out))
	}

	// Chart 0.1.0 kept the CRD in crds/: Helm creates it once, outside the release.
	run("install", "life", oldLayoutChart(t))
	crd := getCRD(t)
	if _, owned := crd.Annotations["meta.helm.sh/release-name"]; owned {
		t.Fatalf("the 0.1.0 layout made the CRD part of the release: %v", crd.Annotations)
	}

	// A plain upgrade refuses to adopt it; the --take-ownership of
	// docs/operations/upgrade.md does.
	if out, err := helm(t, append([]string{"upgrade", "life", "."}, kube...)...); err == nil || !strings.Contains(out, crdName) {
		t.Errorf("plain upgrade from the 0.1.0 layout: err %v, want a refusal naming the CRD (else drop --take-ownership from docs/operations/upgrade.md):\n%s", err, lines(out))
	}
	run("upgrade", "life", ".", "--take-ownership")
	crd = getCRD(t)
	if crd.Labels["helm.sh/chart"] != "gitsync-0.2.0" || crd.Annotations["meta.helm.sh/release-name"] != "life" {
		t.Errorf("after upgrading to 0.2.0 the CRD has labels %v, annotations %v: want it owned by release life", crd.Labels, crd.Annotations)
	}

	// A GitSync exists when the release goes away.
	gs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gitsync.dev/v1alpha1", "kind": "GitSync",
		"metadata": map[string]any{"name": "kept", "namespace": ns},
		"spec":     map[string]any{"source": map[string]any{"url": "https://example.com/repo.git"}},
	}}
	if err := env.Client.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}

	// The next chart version changes the CRD: upgrade applies it.
	run("upgrade", "life", changedCRDChart(t))
	crd = getCRD(t)
	var columns []string
	for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
		columns = append(columns, c.Name)
	}
	if !slices.Contains(columns, "Upgraded") {
		t.Errorf("after an upgrade with a new printer column the CRD's columns are %v, want Upgraded among them", columns)
	}

	run("uninstall", "life", "--wait")
	crd = getCRD(t)
	if crd.DeletionTimestamp != nil {
		t.Error("helm uninstall is deleting the CRD (and with it every GitSync)")
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(gs), gs); err != nil {
		t.Errorf("GitSync after helm uninstall: %v, want it kept", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "life-gitsync"}, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment after helm uninstall: %v, want it deleted (the release is gone)", err)
	}
}

// TestHelmInstallOptIns installs the chart with every opt-in that the
// apiserver knows (NetworkPolicy, Ingress) through helm itself, so the
// apiserver validates them, and the apiserver's addresses come from its
// EndpointSlice when none are listed.
func TestHelmInstallOptIns(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	ensureCRD(t)
	out, err := helm(t, "install", "opt", ".", "--kubeconfig", env.Kubeconfig, "-n", ns, "--set", "crds.install=false",
		"--set", "networkPolicy.enabled=true,networkPolicy.git.except={169.254.0.0/16}",
		"--set", "ingress.enabled=true,ingress.className=nginx,ingress.tls[0].secretName=hook-tls,ingress.tls[0].hosts[0]=gitsync.example.com")
	if err != nil {
		t.Fatalf("helm install with opt-ins: %v\n%s", err, lines(out))
	}
	t.Cleanup(func() { _, _ = helm(t, "uninstall", "opt", "--kubeconfig", env.Kubeconfig, "-n", ns) })

	slice := &unstructured.Unstructured{}
	slice.SetGroupVersionKind(schema.GroupVersionKind{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice"})
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, slice); err != nil {
		t.Fatal(err)
	}
	var want []string
	eps, _, _ := unstructured.NestedSlice(slice.Object, "endpoints")
	for _, e := range eps {
		addrs, _, _ := unstructured.NestedStringSlice(e.(map[string]any), "addresses")
		for _, a := range addrs {
			want = append(want, a+"/32")
		}
	}

	np := &unstructured.Unstructured{}
	np.SetGroupVersionKind(schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"})
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "opt-gitsync"}, np); err != nil {
		t.Fatal(err)
	}
	egress, _, _ := unstructured.NestedSlice(np.Object, "spec", "egress")
	var got []string
	if len(egress) > 0 {
		to, _, _ := unstructured.NestedSlice(egress[0].(map[string]any), "to")
		for _, peer := range to {
			cidr, _, _ := unstructured.NestedString(peer.(map[string]any), "ipBlock", "cidr")
			got = append(got, cidr)
		}
	}
	if len(want) == 0 || !slices.Equal(want, got) {
		t.Errorf("NetworkPolicy egress to the apiserver = %v, want the kubernetes EndpointSlice's addresses %v", got, want)
	}

	ing := &unstructured.Unstructured{}
	ing.SetGroupVersionKind(schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"})
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "opt-gitsync"}, ing); err != nil {
		t.Fatal(err)
	}
	rules, _, _ := unstructured.NestedSlice(ing.Object, "spec", "rules")
	if len(rules) != 1 {
		t.Fatalf("Ingress rules = %v, want one", rules)
	}
	paths, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "http", "paths")
	port, _, _ := unstructured.NestedString(paths[0].(map[string]any), "backend", "service", "port", "name")
	path, _, _ := unstructured.NestedString(paths[0].(map[string]any), "path")
	if port != "webhook" || path != "/hook" {
		t.Errorf("Ingress routes %s to port %q, want /hook to the webhook port", path, port)
	}
}

// TestNetworkPolicyNeedsAPIServer: without a cluster to read them from (helm
// template), the apiserver's addresses must be listed, and the error says how.
func TestNetworkPolicyNeedsAPIServer(t *testing.T) {
	out, err := helm(t, "template", "gs", ".", "--set", "networkPolicy.enabled=true")
	if err == nil || !strings.Contains(out, "networkPolicy.apiServer.cidrs") || !strings.Contains(out, "kubectl get endpointslice kubernetes") {
		t.Errorf("helm template with a NetworkPolicy and no apiserver addresses: err %v, want an error naming the value and how to find them:\n%s", err, lines(out))
	}
}

// oldLayoutChart copies the chart as chart 0.1.0 laid it out: the CRD as a
// plain file in crds/, no CRD template.
func oldLayoutChart(t *testing.T) string {
	t.Helper()
	dir := copyChart(t)
	if err := os.Remove(filepath.Join(dir, "templates", "crd.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "crds"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "crds", "gitsync.dev_gitsyncs.yaml"), v1alpha1.CRDYAML(), 0o600); err != nil {
		t.Fatal(err)
	}
	rewrite(t, filepath.Join(dir, "Chart.yaml"), "version: 0.2.0", "version: 0.1.0")
	return dir
}

// changedCRDChart copies the chart as a next version whose CRD has one more
// printer column.
func changedCRDChart(t *testing.T) string {
	t.Helper()
	dir := copyChart(t)
	rewrite(t, filepath.Join(dir, "templates", "crd.yaml"), "  - additionalPrinterColumns:\n",
		"  - additionalPrinterColumns:\n    - jsonPath: .metadata.generation\n      name: Upgraded\n      type: integer\n")
	rewrite(t, filepath.Join(dir, "Chart.yaml"), "version: 0.2.0", "version: 0.2.1")
	return dir
}

// copyChart copies the chart's files (not its tests) into a temporary directory.
func copyChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "gitsync")
	err := os.CopyFS(dir, os.DirFS("."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// rewrite replaces the first old in path by new, failing if old is absent.
func rewrite(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s lacks %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// asJSON is v as generic JSON values, so numbers compare alike whatever decoded them.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func getCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: crdName}, crd); err != nil {
		t.Fatalf("CRD %s: %v", crdName, err)
	}
	return crd
}

// deleteCRD deletes the GitSync CRD and waits until it is gone.
func deleteCRD(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crdName}}
	if err := env.Client.Delete(ctx, crd); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("CRD %s not gone: %v", crdName, err)
	}
}

// ensureCRD installs the CRD the way the other tests do, if it is missing,
// and waits until GitSyncs are served.
func ensureCRD(t *testing.T) {
	t.Helper()
	var crds []*unstructured.Unstructured
	for _, o := range template(t, "crd", "default") {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o)
		}
	}
	install(t, crds)
}
