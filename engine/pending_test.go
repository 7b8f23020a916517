package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"

	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/engine"
	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/object"
)

// TestFailedSaveLeavesNoOrphan: the inventory save after an apply fails (a
// status write refused, or a crash there); the object was recorded as
// pending before it was applied, so when it leaves the desired set the next
// run prunes it. Checked by recording no pending entries (pendingEntries
// returning nil): the first assertion fails, and the object survives.
func TestFailedSaveLeavesNoOrphan(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	opts := options(t, ns)
	failing := &failingSave{Store: store(ns), okSaves: 1}

	_, err := engine.Run(ctx, []*unstructured.Unstructured{configMap(ns, "a")}, failing, opts)
	var se *engine.StoreError
	if !errors.As(err, &se) || se.Op != "save" {
		t.Fatalf("first run: want the final save to fail, got %v", err)
	}
	if live(t, ns, "a") == nil {
		t.Fatal("ConfigMap a was not applied")
	}
	want := []inventory.Entry{{ID: cmID(ns, "a"), Version: "v1", Pending: true}}
	if diff := cmp.Diff(want, load(t, store(ns)).Entries); diff != "" {
		t.Fatalf("stored after the failed save (-want +got):\n%s", diff)
	}

	res, err := engine.Run(ctx, []*unstructured.Unstructured{configMap(ns, "b")}, store(ns), opts)
	if err != nil {
		t.Fatal(err)
	}
	if live(t, ns, "a") != nil {
		t.Errorf("ConfigMap a left the desired set but was not pruned: %v", res.Pruned.Entries)
	}
	b := live(t, ns, "b")
	want = []inventory.Entry{{ID: cmID(ns, "b"), UID: b.UID, Version: "v1"}}
	if diff := cmp.Diff(want, load(t, store(ns)).Entries); diff != "" {
		t.Errorf("stored after the second run (-want +got):\n%s", diff)
	}
}

// TestPendingSaveFailsNothingApplied: when the pending entries cannot be
// saved, nothing is applied. Checked by ignoring that Save's error: the
// ConfigMap is created.
func TestPendingSaveFailsNothingApplied(t *testing.T) {
	ns := env.Namespace(t)
	_, err := engine.Run(context.Background(), []*unstructured.Unstructured{configMap(ns, "a")}, &failingSave{Store: store(ns)}, options(t, ns))
	var se *engine.StoreError
	if !errors.As(err, &se) || se.Op != "record pending" {
		t.Fatalf("want the pending save to fail, got %v", err)
	}
	if live(t, ns, "a") != nil {
		t.Error("ConfigMap a was applied although its pending entry could not be saved")
	}
}

// TestPendingResolved: pending entries left by an earlier run are resolved
// by the next one, each by what is live. Checked by dropping the owner
// label test for pending entries in inventory's notOurs (foreign is then
// deleted) and by keeping absent entries (the inventory then differs).
func TestPendingResolved(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	ourLabels := object.OwnerLabels(owner, ns)
	createCM(t, ns, "left-git", ourLabels)
	createCM(t, ns, "foreign", object.OwnerLabels("other", ns))
	unlabelled := createCM(t, ns, "unlabelled", nil)
	kept := createCM(t, ns, "still-in-git", ourLabels)
	pending := func(name string) inventory.Entry {
		return inventory.Entry{ID: cmID(ns, name), Version: "v1", Pending: true}
	}
	if err := store(ns).Save(ctx, inventory.New(pending("left-git"), pending("foreign"), pending("unlabelled"), pending("absent"), pending("still-in-git"))); err != nil {
		t.Fatal(err)
	}

	res, err := engine.Run(ctx, []*unstructured.Unstructured{configMap(ns, "still-in-git")}, store(ns), options(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]inventory.Action{}
	for _, e := range res.Pruned.Entries {
		got[e.ID.Name] = e.Action
	}
	wantActions := map[string]inventory.Action{
		"left-git": inventory.ActionPruned, "foreign": inventory.ActionKept,
		"unlabelled": inventory.ActionKept, "absent": inventory.ActionAbsent,
	}
	if diff := cmp.Diff(wantActions, got); diff != "" {
		t.Errorf("prune actions (-want +got):\n%s", diff)
	}
	for name, want := range map[string]bool{"left-git": false, "foreign": true, "unlabelled": true, "still-in-git": true} {
		if got := live(t, ns, name) != nil; got != want {
			t.Errorf("ConfigMap %s exists: %v, want %v", name, got, want)
		}
	}
	if u := live(t, ns, "unlabelled"); u == nil || u.UID != unlabelled.UID || len(u.Labels) != 0 {
		t.Errorf("unlabelled ConfigMap deleted or changed: %v", u)
	}
	want := []inventory.Entry{{ID: cmID(ns, "still-in-git"), UID: kept.UID, Version: "v1"}}
	if diff := cmp.Diff(want, load(t, store(ns)).Entries); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
}

// TestPreviousFormatNoMassPrune: an inventory stored before pending entries
// existed (every entry with its UID, no marker; one entry without a UID) is
// read as it always was: with the desired set unchanged nothing is
// deleted and nothing is written; an entry without a UID that left the
// desired set is kept, never treated as pending. Checked by reading entries
// without a UID as pending (the unmarked ConfigMap is then deleted).
func TestPreviousFormatNoMassPrune(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	ourLabels := object.OwnerLabels(owner, ns)
	desired := []*unstructured.Unstructured{configMap(ns, "a"), configMap(ns, "b"), configMap(ns, "c")}
	if _, err := engine.Run(ctx, desired, store(ns), options(t, ns)); err != nil {
		t.Fatal(err)
	}
	noUID := createCM(t, ns, "no-uid", ourLabels)
	var entries []inventory.Entry
	for _, name := range []string{"a", "b", "c"} {
		entries = append(entries, inventory.Entry{ID: cmID(ns, name), UID: live(t, ns, name).UID, Version: "v1"})
	}
	entries = append(entries, inventory.Entry{ID: cmID(ns, noUID.Name), Version: "v1"})
	writePreviousFormat(t, ns, entries)
	rv := inventoryRV(t, ns)

	res, err := engine.Run(ctx, desired[:3], store(ns), options(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	if res.Pruned == nil || res.Pruned.Count(inventory.ActionPruned) != 0 {
		t.Fatalf("want one plan deleting nothing, got %+v", res.Pruned)
	}
	for _, name := range []string{"a", "b", "c", "no-uid"} {
		if live(t, ns, name) == nil {
			t.Errorf("ConfigMap %s was deleted", name)
		}
	}
	// The entry without a UID was kept on purpose and is forgotten, as
	// before; the others are rewritten unchanged but for it.
	if got := load(t, store(ns)); got.Len() != 3 || got.Has(cmID(ns, "no-uid")) {
		t.Errorf("stored %v, want a, b and c", got.IDs())
	}
	if rv == inventoryRV(t, ns) {
		t.Error("inventory not rewritten without the forgotten entry")
	}
	rv = inventoryRV(t, ns)
	if _, err := engine.Run(ctx, desired, store(ns), options(t, ns)); err != nil {
		t.Fatal(err)
	}
	if got := inventoryRV(t, ns); got != rv {
		t.Errorf("converged run wrote the inventory (resourceVersion %s -> %s)", rv, got)
	}
}

// TestSkippedObjectsLeaveNoPendingEntry: a custom resource skipped because
// its CRD failed was recorded as pending and never written; the run drops
// its entry, so once both leave the desired set nothing waits for a kind
// that will never be served. Checked by keeping skipped objects' pending
// entries in withoutUnapplied: the first inventory lists the Gadget and
// the second run fails with "kind not served".
func TestSkippedObjectsLeaveNoPendingEntry(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	group := rand.String(6) + ".example.com"
	badCRD := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "wrong-name." + group}, // must be gadgets.<group>: refused
		"spec": map[string]any{
			"group": group,
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
			"scope": "Namespaced",
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}}
	gadget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g"},
	}}
	opts := options(t, ns)
	res, err := engine.Run(ctx, []*unstructured.Unstructured{configMap(ns, "a"), badCRD, gadget}, store(ns), opts)
	var ae *engine.ApplyError
	if !errors.As(err, &ae) {
		t.Fatalf("want the CRD to fail, got %v", err)
	}
	if got := res.Changes.Entries[2].Action; got != apply.Skipped {
		t.Fatalf("Gadget %s, want skipped", got)
	}
	stored := load(t, store(ns))
	if stored.Has(object.ID{Group: group, Kind: "Gadget", Namespace: ns, Name: "g"}) {
		t.Errorf("the skipped Gadget stays recorded as pending: %v", stored.Entries)
	}

	if _, err := engine.Run(ctx, []*unstructured.Unstructured{configMap(ns, "a")}, store(ns), opts); err != nil {
		t.Errorf("after the CRD and Gadget left: %v", err)
	}
	if got := load(t, store(ns)).IDs(); len(got) != 1 || got[0] != cmID(ns, "a") {
		t.Errorf("stored %v, want ConfigMap a alone", got)
	}
}

// TestFinalSaveByCaller: with Options.FinalSaveByCaller, Run saves the
// pending record alone and returns the final inventory for its caller to
// write; when the caller never writes it (it died), the next run still
// prunes what the first one created and pruned what left Git. Checked by
// ignoring the option in Run: the store then holds the final inventory
// (two saves) and the first assertion fails.
func TestFinalSaveByCaller(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	opts := options(t, ns)
	if _, err := engine.Run(ctx, []*unstructured.Unstructured{configMap(ns, "a")}, store(ns), opts); err != nil {
		t.Fatal(err)
	}
	opts.FinalSaveByCaller = true
	counted := &failingSave{Store: store(ns), okSaves: 10}
	res, err := engine.Run(ctx, []*unstructured.Unstructured{configMap(ns, "b")}, counted, opts)
	if err != nil {
		t.Fatal(err)
	}
	if counted.saves != 1 {
		t.Errorf("Run saved %d times, want once (the pending record)", counted.saves)
	}
	if live(t, ns, "a") != nil {
		t.Error("ConfigMap a left the desired set but was not pruned")
	}
	b := live(t, ns, "b")
	want := []inventory.Entry{{ID: cmID(ns, "b"), UID: b.UID, Version: "v1"}}
	if diff := cmp.Diff(want, res.Inventory.Entries); diff != "" {
		t.Errorf("Result.Inventory (-want +got):\n%s", diff)
	}
	a := cmID(ns, "a")
	stored := load(t, store(ns))
	if !stored.Has(a) || !stored.Has(cmID(ns, "b")) {
		t.Fatalf("stored %v, want the pending record: a (not yet known pruned) and b pending", stored.Entries)
	}

	// The caller died before its write: the next run starts from the
	// pending record, finds a gone, and records b with its UID.
	opts.FinalSaveByCaller = false
	if _, err := engine.Run(ctx, []*unstructured.Unstructured{configMap(ns, "b")}, store(ns), opts); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, load(t, store(ns)).Entries); diff != "" {
		t.Errorf("stored after the next run (-want +got):\n%s", diff)
	}
}
