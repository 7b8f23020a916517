package examples_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gitsync.dev/gitsync/apply"
)

// TestDependsOn renders and applies both paths of the depends-on example
// (waves valid, the smoke test in wave 1), and applies its GitSyncs so the
// real CRD validates dependsOn.
func TestDependsOn(t *testing.T) {
	installGitSyncCRD(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "depends-on-example"}}
	if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	db := render(t, "examples/depends-on/database")
	wantSubjects(t, db, "Deployment/redis", "Service/redis")
	app := render(t, "examples/depends-on/app")
	wantSubjects(t, app, "Deployment/web", "Service/web", "Job/smoke-test")
	waves := map[string]int{}
	for _, o := range app {
		w, err := apply.WaveOf(o)
		if err != nil {
			t.Fatalf("%s: %v", o.GetName(), err)
		}
		waves[o.GetName()] = w
	}
	if waves["smoke-test"] != 1 || waves["web"] != 0 {
		t.Errorf("waves = %v, want smoke-test in 1 and web in 0", waves)
	}
	mustApply(t, ns.Name, db)
	mustApply(t, ns.Name, app)

	gitSyncs := render(t, "examples/depends-on/gitsyncs.yaml")
	mustApply(t, "", gitSyncs)
	live := get(t, gitSyncGVK, ns.Name, "app")
	deps := field(t, live, "spec", "dependsOn").([]any)
	if len(deps) != 1 || deps[0].(map[string]any)["name"] != "database" {
		t.Errorf("app's dependsOn = %v, want [database]", deps)
	}
	get(t, gitSyncGVK, ns.Name, "database")
}
