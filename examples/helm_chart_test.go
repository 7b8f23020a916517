package examples_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/prepare"
	sourcerender "gitsync.dev/gitsync/source/render"
)

// TestHelmChartExample applies the example's GitSync (so the real CRD
// validates spec.helm), renders the chart with the settings the agent
// derives from it, applies the objects, and applies them again with nothing
// to change: helm's rendered empty maps and labels are what the apiserver
// keeps.
func TestHelmChartExample(t *testing.T) {
	installGitSyncCRD(t)
	ctx := context.Background()
	objs := render(t, "examples/helm-chart/gitsync.yaml")
	wantSubjects(t, objs, "GitSync.gitsync.dev/helm-guestbook/guestbook", "Namespace/helm-guestbook")
	mustApply(t, "", objs)

	live := get(t, gitSyncGVK, "helm-guestbook", "guestbook")
	gs := &v1.GitSync{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, gs); err != nil {
		t.Fatal(err)
	}
	settings, err := prepare.Settings(gs)
	if err != nil {
		t.Fatal(err)
	}
	opts := sourcerender.DefaultOptions()
	opts.Settings = settings
	r, err := sourcerender.Render(ctx, repoRoot(t), gs.Spec.Source.Path, opts)
	if err != nil {
		t.Fatalf("render %s: %v", gs.Spec.Source.Path, err)
	}
	wantSubjects(t, r.Objects, "Deployment/guestbook", "Service/guestbook")

	ns := env.Namespace(t)
	mustApply(t, ns, r.Objects)
	d := get(t, deploymentGVK, ns, "guestbook")
	if got := field(t, d, "spec", "replicas"); got != int64(3) {
		t.Errorf("replicas = %v, want 3 from values-prod.yaml", got)
	}
	s := get(t, serviceGVK, ns, "guestbook")
	if port := field(t, s, "spec", "ports").([]any)[0].(map[string]any)["port"]; port != int64(8080) {
		t.Errorf("service port = %v, want 8080 from spec.helm.values", port)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "guestbook-test-connection"}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("the helm test Pod: %v, want NotFound (test hooks are not applied)", err)
	}
	cs := tryApply(t, env.Config, ns, r.Objects)
	for _, e := range cs.Entries {
		if e.Action != apply.Unchanged {
			t.Errorf("second apply: %s %s, want unchanged", e.Subject, e.Action)
		}
	}
}
