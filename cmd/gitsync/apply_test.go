package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/object"
)

// TestPrunePreviewFromInventory: an inventory written by "apply --name"
// makes diff --name show the objects that left the directory, apply --prune
// delete exactly those, and neither happens without the name.
func TestPrunePreviewFromInventory(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.yaml": configMap("a", "k", "v"), "b.yaml": configMap("b", "k", "v"),
		"c.yaml": configMap("c", "k", "v"), "d.yaml": configMap("d", "k", "v"),
	})
	wantCode(t, gitsyncIn(t, ns, "apply", dir, "--name", "web"), 0)
	// Someone else's ConfigMap with the same owner labels but not in the inventory.
	foreign := &corev1.ConfigMap{}
	foreign.Name, foreign.Namespace = "foreign", ns
	foreign.Labels = object.CLIOwner(ns, "web").Labels()
	if err := testClient(t).Create(context.Background(), foreign); err != nil {
		t.Fatal(err)
	}

	writeFiles(t, dir, map[string]string{"b.yaml": ""})
	r := gitsyncIn(t, ns, "diff", dir, "--name", "web")
	wantCode(t, r, 1)
	if diff := cmp.Diff([]string{"- ConfigMap/" + ns + "/b (prune)"}, changeLines(r.stdout)); diff != "" {
		t.Errorf("prune preview (-want +got):\n%s\n%s", diff, r)
	}

	// Without the name there is no prune, and the objects keep their owner
	// labels: nothing differs.
	r = gitsyncIn(t, ns, "diff", dir)
	wantCode(t, r, 0)
	if strings.Contains(r.stdout, "(prune)") || len(lines(r.stdout, "- ")) != 0 {
		t.Errorf("without --name no prune may be shown:\n%s", r)
	}

	r = gitsyncIn(t, ns, "apply", dir, "--name", "web")
	wantCode(t, r, 0)
	if strings.Contains(r.stdout, "pruned") || !exists(t, ns, "b") {
		t.Fatalf("apply without --prune deleted something:\n%s", r)
	}

	r = gitsyncIn(t, ns, "apply", dir, "--name", "web", "--prune", "--dry-run")
	wantCode(t, r, 0)
	if diff := cmp.Diff([]string{"- ConfigMap/" + ns + "/b (prune)"}, changeLines(r.stdout)); diff != "" || !exists(t, ns, "b") {
		t.Errorf("apply --dry-run (-want +got):\n%s\n%s", diff, r)
	}

	r = gitsyncIn(t, ns, "apply", dir, "--name", "web", "--prune")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "ConfigMap/"+ns+"/b pruned") || !strings.Contains(r.stdout, "3 unchanged, 1 pruned") {
		t.Errorf("apply --prune output:\n%s", r)
	}
	if exists(t, ns, "b") {
		t.Errorf("ConfigMap b still exists after apply --prune")
	}
	if !exists(t, ns, "foreign") {
		t.Errorf("a ConfigMap outside the inventory was pruned")
	}
	r = gitsyncIn(t, ns, "diff", dir, "--name", "web")
	wantCode(t, r, 0)
}

// TestApplyResolvesPendingEntries: an inventory whose entry is still
// pending (the apply ran, its record did not: a crash or a refused save)
// lets apply --prune delete the object once it leaves the directory, so it
// is not left behind with our owner labels. Checked by treating pending
// entries like entries without a UID in inventory's notOurs: left is kept
// and survives.
func TestApplyResolvesPendingEntries(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.yaml": configMap("a", "k", "v"), "left.yaml": configMap("left", "k", "v")})
	wantCode(t, gitsyncIn(t, ns, "apply", dir, "--name", "web"), 0)
	ctx := context.Background()
	store := inventory.NewConfigMapStore(testClient(t), ns, "web")
	inv, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var entries []inventory.Entry
	for _, e := range inv.Entries {
		if e.ID.Name == "left" {
			e.UID, e.Pending = "", true
		}
		entries = append(entries, e)
	}
	if err := store.Save(ctx, inventory.New(entries...)); err != nil {
		t.Fatal(err)
	}

	writeFiles(t, dir, map[string]string{"left.yaml": ""})
	r := gitsyncIn(t, ns, "apply", dir, "--name", "web", "--prune")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "ConfigMap/"+ns+"/left pruned") || exists(t, ns, "left") {
		t.Errorf("the pending ConfigMap that left the directory was not pruned:\n%s", r)
	}
}

// TestPruneSafetyRails: the prune limit and an empty source refuse, and an
// apply that failed prunes nothing.
func TestPruneSafetyRails(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := t.TempDir()
	all := map[string]string{"keep.yaml": configMap("keep", "k", "v")}
	gone := map[string]string{}
	for i := range 11 { // the share limit counts above ten stale objects
		name := fmt.Sprintf("old-%02d", i)
		all[name+".yaml"] = configMap(name, "k", "v")
		gone[name+".yaml"] = ""
	}
	writeFiles(t, dir, all)
	wantCode(t, gitsyncIn(t, ns, "apply", dir, "--name", "rails"), 0)

	writeFiles(t, dir, gone) // 11 of 12: over the 50% default
	r := gitsyncIn(t, ns, "diff", dir, "--name", "rails")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "prune limit exceeded") {
		t.Errorf("diff: want the refusal as a warning:\n%s", r)
	}
	r = gitsyncIn(t, ns, "apply", dir, "--name", "rails", "--prune")
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, "prune limit exceeded") || !exists(t, ns, "old-00") {
		t.Fatalf("apply --prune over the limit:\n%s", r)
	}

	// A failing object (invalid for the apiserver) blocks the prune.
	writeFiles(t, dir, map[string]string{"bad.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: bad\nspec:\n  ports:\n  - port: 700000\n"})
	r = gitsyncIn(t, ns, "apply", dir, "--name", "rails", "--prune", "--prune-max-share", "0")
	wantCode(t, r, 1)
	if !strings.Contains(r.stdout, "Service/"+ns+"/bad failed") || !exists(t, ns, "old-00") {
		t.Fatalf("apply with a failed object:\n%s", r)
	}
	writeFiles(t, dir, map[string]string{"bad.yaml": ""})
	r = gitsyncIn(t, ns, "apply", dir, "--name", "rails", "--prune", "--prune-max-share", "0")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "1 unchanged, 11 pruned") || exists(t, ns, "old-00") || exists(t, ns, "old-10") {
		t.Errorf("limit off: the old ConfigMaps should be pruned:\n%s", r)
	}

	writeFiles(t, dir, map[string]string{"keep.yaml": ""})
	r = gitsyncIn(t, ns, "apply", dir, "--name", "rails", "--prune")
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, "desired inventory is empty") || !exists(t, ns, "keep") {
		t.Errorf("empty source must not prune:\n%s", r)
	}
	wantCode(t, gitsyncIn(t, ns, "apply", dir, "--name", "rails", "--prune", "--allow-empty"), 0)
	if exists(t, ns, "keep") {
		t.Errorf("--allow-empty: keep should be pruned")
	}
}

// TestApplyFailures: bad flags exit 2, a failed wait exits 1 and names the object.
func TestApplyFailures(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := fixture(t, "mixed", ns)

	r := gitsyncIn(t, ns, "apply", dir, "--prune")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "--prune needs --name") {
		t.Errorf("--prune without --name:\n%s", r)
	}

	// No controller-manager runs in this control plane: the Deployment never becomes ready.
	r = gitsyncIn(t, ns, "apply", dir, "--wait", "--timeout", "2s")
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, "Deployment/"+ns+"/web") || !strings.Contains(r.stdout, "6 created") {
		t.Errorf("apply --wait timeout:\n%s", r)
	}

	ready := t.TempDir()
	writeFiles(t, ready, map[string]string{"a.yaml": configMap("ready", "k", "v")})
	r = gitsyncIn(t, ns, "apply", ready, "--wait", "--timeout", "30s")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "1 objects ready") {
		t.Errorf("apply --wait on a ConfigMap:\n%s", r)
	}
}

func exists(t *testing.T, ns, name string) bool {
	t.Helper()
	err := testClient(t).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// testClient returns a client with its own scheme: env.Scheme is shared with
// helpers that add types to it, which must not race with parallel tests.
func testClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(env.Config, client.Options{Scheme: cliScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
