package main

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestRecreateService walks the Service: a clusterIP change is
// refused with the way out, previewed by diff --force, and done by apply
// --force (a new Service, a new UID).
func TestRecreateService(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := t.TempDir()
	svc := func(clusterIP string) string {
		return "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  clusterIP: " + clusterIP +
			"\n  selector: {app: web}\n  ports: [{port: 80}]\n"
	}
	writeFiles(t, dir, map[string]string{"svc.yaml": svc(`""`)})
	wantCode(t, gitsyncIn(t, ns, "apply", dir), 0)
	oldUID := serviceUID(t, ns)

	writeFiles(t, dir, map[string]string{"svc.yaml": svc("None")})
	subject := "Service/" + ns + "/web"
	refused := "immutable field spec.clusterIPs[0] changed: to delete and recreate the object, " +
		"use --force (spec.force for a GitSync) or annotate it gitsync.dev/recreate: enabled"

	r := gitsyncIn(t, ns, "diff", dir)
	wantCode(t, r, 2)
	if d := cmp.Diff([]string{"! " + subject + " (would fail: " + refused + ")", "Differences: 1 failed."}, outputLines(r.stdout)); d != "" {
		t.Errorf("diff (-want +got):\n%s\n%s", d, r)
	}

	r = gitsyncIn(t, ns, "apply", dir)
	wantCode(t, r, 1)
	if d := cmp.Diff([]string{subject + " failed: " + refused, "1 failed"}, outputLines(r.stdout)); d != "" {
		t.Errorf("apply (-want +got):\n%s\n%s", d, r)
	}
	if serviceUID(t, ns) != oldUID {
		t.Fatal("recreated without --force")
	}

	r = gitsyncIn(t, ns, "diff", "--force", dir)
	wantCode(t, r, 1)
	want := []string{"~ " + subject + " (configure)", "    (" + recreateReason + ")", "Differences: 1 to configure."}
	if d := cmp.Diff(want, outputLines(r.stdout)); d != "" {
		t.Errorf("diff --force (-want +got):\n%s\n%s", d, r)
	}
	if serviceUID(t, ns) != oldUID {
		t.Fatal("diff --force recreated the Service")
	}

	r = gitsyncIn(t, ns, "apply", "--force", dir)
	wantCode(t, r, 0)
	if d := cmp.Diff([]string{subject + " configured (recreated)", "1 configured"}, outputLines(r.stdout)); d != "" {
		t.Errorf("apply --force (-want +got):\n%s\n%s", d, r)
	}
	if serviceUID(t, ns) == oldUID {
		t.Error("apply --force kept the old Service")
	}
}

func serviceUID(t *testing.T, ns string) types.UID {
	t.Helper()
	var s corev1.Service
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, &s); err != nil {
		t.Fatal(err)
	}
	return s.UID
}
