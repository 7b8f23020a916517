package main

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/object"
)

// TestCLINameNeverTakesAGitSyncsObject: `gitsync apply --name web -n NS`
// and the GitSync NS/web are different owners. An object the GitSync owns
// is refused (exit 1, "owned by GitSync NS/web"), left unchanged, and a
// diff marks it as a refusal. (Checked: with the CLI stamping the GitSync's
// labels, as before, the apply succeeds and claims the object.)
func TestCLINameNeverTakesAGitSyncsObject(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	ctx := context.Background()
	c := testClient(t)
	owned := &corev1.ConfigMap{}
	owned.Name, owned.Namespace = "shared", ns
	owned.Labels = object.OwnerLabels("web", ns)
	owned.Data = map[string]string{"k": "gitsync"}
	if err := c.Create(ctx, owned); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"shared.yaml": configMap("shared", "k", "cli")})

	r := gitsyncIn(t, ns, "apply", dir, "--name", "web")
	wantCode(t, r, 1)
	if !strings.Contains(r.stdout+r.stderr, "owned by GitSync "+ns+"/web") {
		t.Errorf("apply output does not name the owner:\n%s", r)
	}
	r = gitsyncIn(t, ns, "diff", dir, "--name", "web")
	wantCode(t, r, 2)
	if !strings.Contains(r.stdout+r.stderr, "owned by GitSync "+ns+"/web") {
		t.Errorf("diff output does not name the owner:\n%s", r)
	}
	got := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(owned), got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != owned.ResourceVersion || got.Data["k"] != "gitsync" || !object.OwnedBy(got.Labels, "web", ns) {
		t.Errorf("the GitSync's object changed: labels %v data %v", got.Labels, got.Data)
	}
}

// TestCLIKeepsItsLegacyObjects: an object `gitsync apply --name web`
// labelled before the owner-kind label existed (it reads as the GitSync
// NS/web's) stays the CLI's because its inventory recorded that UID: it is
// applied and relabelled as the CLI's. (Checked: without the recorded
// inventory passed to the applier it is refused as owned by the GitSync.)
func TestCLIKeepsItsLegacyObjects(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	ctx := context.Background()
	c := testClient(t)
	legacy := &corev1.ConfigMap{}
	legacy.Name, legacy.Namespace = "legacy", ns
	legacy.Labels = object.OwnerLabels("web", ns)
	legacy.Data = map[string]string{"k": "v"}
	// As if an older gitsync had written it by hand: kubectl's fields are taken back.
	if err := c.Create(ctx, legacy, client.FieldOwner("kubectl")); err != nil {
		t.Fatal(err)
	}
	store := inventory.NewConfigMapStore(c, ns, "web")
	id := object.ID{Kind: "ConfigMap", Namespace: ns, Name: "legacy"}
	if err := store.Save(ctx, inventory.New(inventory.Entry{ID: id, UID: legacy.UID, Version: "v1"})); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"legacy.yaml": configMap("legacy", "k", "v2")})
	r := gitsyncIn(t, ns, "apply", dir, "--name", "web")
	wantCode(t, r, 0)
	got := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(legacy), got); err != nil {
		t.Fatal(err)
	}
	if !object.CLIOwner(ns, "web").Owns(got.Labels) || got.Data["k"] != "v2" || got.UID != legacy.UID {
		t.Errorf("legacy object not kept by the CLI: labels %v data %v", got.Labels, got.Data)
	}
}
