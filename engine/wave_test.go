package engine_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/engine"
	"gitsync.dev/gitsync/inventory"
)

// TestHeldWavesPruneNothing: a run whose gate holds wave 1 records what it
// applied and the held object as pending, and prunes nothing, although an
// object left the desired set; the run that applies every wave prunes it.
// Checked by pruning held runs like complete ones: "old" is deleted by the
// first run.
func TestHeldWavesPruneNothing(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	opts := options(t, ns)
	if _, err := engine.Run(ctx, []*unstructured.Unstructured{configMap(ns, "old")}, store(ns), opts); err != nil {
		t.Fatal(err)
	}
	later := configMap(ns, "later")
	later.SetAnnotations(map[string]string{v1.AnnotationWave: "1"})
	desired := []*unstructured.Unstructured{configMap(ns, "now"), later}

	opts.BetweenWaves = func(context.Context, int, int, *apply.ChangeSet) bool { return false }
	res, err := engine.Run(ctx, desired, store(ns), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Held || res.Pruned != nil {
		t.Fatalf("held run: Held=%v, Pruned=%v; want held and no prune", res.Held, res.Pruned)
	}
	if live(t, ns, "old") == nil {
		t.Fatal("ConfigMap old pruned by a run that held a wave")
	}
	if live(t, ns, "later") != nil {
		t.Fatal("ConfigMap later applied by a run that held its wave")
	}
	want := []inventory.Entry{
		{ID: cmID(ns, "later"), Version: "v1", Pending: true},
		{ID: cmID(ns, "now"), UID: live(t, ns, "now").UID, Version: "v1"},
		{ID: cmID(ns, "old"), UID: live(t, ns, "old").UID, Version: "v1"},
	}
	if d := cmp.Diff(want, load(t, store(ns)).Entries); d != "" {
		t.Errorf("stored after the held run (-want +got):\n%s", d)
	}

	opts.BetweenWaves = nil
	res, err = engine.Run(ctx, desired, store(ns), opts)
	if err != nil || res.Held {
		t.Fatalf("complete run: held=%v, err=%v", res.Held, err)
	}
	if live(t, ns, "old") != nil || live(t, ns, "later") == nil {
		t.Errorf("after every wave applied: old should be pruned and later applied")
	}
}
