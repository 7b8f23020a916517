package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/internal/testcharts"
	"gitsync.dev/gitsync/internal/testenv"
)

// nullOverlay is a kustomize overlay over a base that renders keys with
// nothing under them, as a chart's `helm template` output does.
var nullOverlay = map[string]string{
	"base/kustomization.yaml": "resources: [deploy.yaml]\n",
	"base/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
      annotations:
    spec:
      containers:
      - name: web
        image: nginx
        resources:
        env:
      nodeSelector:
`,
	"overlay/kustomization.yaml": "resources: [../base]\nnamePrefix: prod-\n",
}

// TestCLIChartsConverge: the test charts (podinfo's trailing block scalar,
// Traefik's keys with nothing under them, a CRD and its custom resource)
// and a kustomize overlay with null fields apply, then diff in sync even
// after other managers wrote below those nulls (the controller-manager's
// revision annotation, a rollout restart's pod template annotation), and a
// second apply writes nothing. podinfo's redis.conf keeps its final
// newline in the cluster.
//
// Checked by removing the normalizeNulls call from source/render: diff then
// reports traefik's and the overlay's Deployments ("gitsync takes
// .metadata.annotations from kube-controller-manager") and the apply writes
// them; and by dropping the newline source/helm appends: redis.conf lacks it.
func TestCLIChartsConverge(t *testing.T) {
	cases := map[string]struct {
		files map[string]string
		path  string
	}{"overlay": {nullOverlay, "overlay"}}
	for _, name := range testcharts.Names() {
		cases[name] = struct {
			files map[string]string
			path  string
		}{testcharts.Files(name, "chart"), "chart"}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			t.Cleanup(func() { deleteTestCRDs(t, ns) })
			dir := t.TempDir()
			git(t, dir, "init", "-q")
			writeFiles(t, dir, tc.files)
			path := filepath.Join(dir, tc.path)

			wantCode(t, gitsyncIn(t, ns, "apply", path, "--name", name), 0)
			othersWrite(t, ns)
			r := gitsyncIn(t, ns, "diff", path, "--name", name)
			wantCode(t, r, 0)
			if got := changeLines(r.stdout); len(got) != 0 {
				t.Errorf("apply, revision annotation, then diff: want no differences, got %q\n%s", got, r)
			}
			if n := cliWrites(t, ns, "apply", path, "--name", name); n != 0 {
				t.Errorf("second apply sent %d writes, want 0", n)
			}
			if name == testcharts.Podinfo {
				checkRedisConf(t, env.Client, ns, "podinfo-redis")
			}
		})
	}
}

// othersWrite does to every Deployment of ns what the controller-manager
// does (no controller-manager runs here), with its field manager: the
// deployment.kubernetes.io/revision annotation; and what `kubectl rollout
// restart` does: a restartedAt annotation on the pod template.
func othersWrite(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	list := &appsv1.DeploymentList{}
	if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		t.Fatalf("no Deployment in %s to annotate", ns)
	}
	for _, w := range []struct{ manager, patch string }{
		{"kube-controller-manager", `{"metadata":{"annotations":{"deployment.kubernetes.io/revision":"1"}}}`},
		{"kubectl-rollout", `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2025-03-01T12:00:00Z"}}}}}`},
	} {
		for i := range list.Items {
			err := env.Client.Patch(ctx, &list.Items[i], client.RawPatch(types.MergePatchType, []byte(w.patch)), client.FieldOwner(w.manager))
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// cliWrites runs the binary in ns through a counting proxy and returns how
// many writes (not dry runs) it sent.
func cliWrites(t *testing.T, ns string, args ...string) int {
	t.Helper()
	proxy := env.NewFaultProxy(t)
	var rules []*testenv.FaultRule
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		rules = append(rules, proxy.MustInject(t, testenv.Fault{Method: m, Query: map[string]string{"dryRun": ""}}))
	}
	r := gitsync(t, append(args, "--kubeconfig", proxy.Kubeconfig, "-n", ns)...)
	wantCode(t, r, 0)
	n := 0
	for _, rule := range rules {
		n += rule.Matched()
	}
	if n != 0 {
		t.Logf("gitsync %s:\n%s", strings.Join(args, " "), r)
	}
	return n
}

// checkRedisConf checks that podinfo's redis.conf, the block scalar that
// ends its template, reached the cluster with its final newline.
func checkRedisConf(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		t.Fatal(err)
	}
	want := "maxmemory 64mb\nmaxmemory-policy allkeys-lru\nsave \"\"\nappendonly no\n"
	if got := cm.Data["redis.conf"]; got != want {
		t.Errorf("ConfigMap %s redis.conf = %q, want %q (helm template's, its final newline kept)", name, got, want)
	}
}

// deleteTestCRDs removes the CRD the traefik test chart installs for ns.
func deleteTestCRDs(t *testing.T, ns string) {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "middlewares.traefik." + ns + ".test"}}
	if err := env.Client.Delete(context.Background(), crd); client.IgnoreNotFound(err) != nil {
		t.Errorf("delete %s: %v", crd.Name, err)
	}
}
