package inventory

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/object"
)

func TestPruneRemovedFromGit(t *testing.T) {
	ns := env.Namespace(t)
	c := watchClient(t)
	a, b, gone := ours(t, ns, "a"), ours(t, ns, "b"), ours(t, ns, "gone")
	desired := New(a, b)

	res, err := prune(t, c, New(a, b, gone), desired, testOptions(t, ns))
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	want := map[string]Action{"ConfigMap/" + ns + "/gone": ActionPruned}
	if diff := cmp.Diff(want, actions(res)); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if exists(t, gone) || !exists(t, a) || !exists(t, b) {
		t.Errorf("after prune: gone exists=%v, a=%v, b=%v; want false true true", exists(t, gone), exists(t, a), exists(t, b))
	}
	if diff := cmp.Diff(desired.Entries, res.Remaining.Entries); diff != "" {
		t.Errorf("Remaining (-want +got):\n%s", diff)
	}
}

// TestPruneOnlyWhatIsStillOurs: objects someone else relabelled, unlabelled,
// recreated, or annotated prune: disabled are kept, and dropped from the
// inventory.
func TestPruneOnlyWhatIsStillOurs(t *testing.T) {
	ns := env.Namespace(t)
	c := watchClient(t)
	ctx := context.Background()
	anchor := ours(t, ns, "anchor")
	relabelled := createCM(t, ns, "relabelled", object.OwnerLabels("other-app", ns), nil)
	otherNamespace := createCM(t, ns, "other-namespace", object.OwnerLabels(owner, "elsewhere"), nil)
	unlabelled := createCM(t, ns, "unlabelled", nil, nil)
	disabled := createCM(t, ns, "disabled", object.OwnerLabels(owner, ns), map[string]string{v1.AnnotationPrune: v1.PruneDisabled})
	recreated := ours(t, ns, "recreated")
	if err := c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metaOf(recreated)}); err != nil {
		t.Fatal(err)
	}
	newer := ours(t, ns, "recreated") // same name, owner labels, a new UID
	old := New(anchor, relabelled, otherNamespace, unlabelled, disabled, recreated)
	desired := New(anchor)

	res, err := prune(t, c, old, desired, testOptions(t, ns))
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	want := map[string]Action{
		"ConfigMap/" + ns + "/relabelled":      ActionKept,
		"ConfigMap/" + ns + "/other-namespace": ActionKept,
		"ConfigMap/" + ns + "/unlabelled":      ActionKept,
		"ConfigMap/" + ns + "/disabled":        ActionKept,
		"ConfigMap/" + ns + "/recreated":       ActionKept,
	}
	if diff := cmp.Diff(want, actions(res)); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	for _, e := range []Entry{relabelled, otherNamespace, unlabelled, disabled, newer} {
		if !exists(t, e) {
			t.Errorf("%s was deleted", e.ID)
		}
	}
	for subject, substr := range map[string]string{
		"ConfigMap/" + ns + "/relabelled": "gitsync.dev/name=other-app",
		"ConfigMap/" + ns + "/unlabelled": "gitsync.dev/name=<none>",
		"ConfigMap/" + ns + "/disabled":   "prune: disabled",
		"ConfigMap/" + ns + "/recreated":  "recreated by someone else",
	} {
		if got := reasons(res)[subject]; !strings.Contains(got, substr) {
			t.Errorf("reason for %s = %q, want it to mention %q", subject, got, substr)
		}
	}
	if diff := cmp.Diff(desired.Entries, res.Remaining.Entries); diff != "" {
		t.Errorf("Remaining (-want +got):\n%s", diff)
	}
}

func TestEmptyRender(t *testing.T) {
	ns := env.Namespace(t)
	c := watchClient(t)
	a := ours(t, ns, "a")
	opts := testOptions(t, ns)

	_, err := Plan(context.Background(), c, New(a), New(), opts)
	var refused *RefusedError
	if !errors.Is(err, ErrEmptyDesired) || !errors.As(err, &refused) {
		t.Fatalf("Plan of an empty render = %v, want ErrEmptyDesired", err)
	}
	if diff := cmp.Diff([]Entry{a}, refused.Keep.Entries); diff != "" {
		t.Errorf("Keep (-want +got):\n%s", diff)
	}
	if !exists(t, a) {
		t.Fatal("an empty render deleted an object")
	}

	opts.AllowEmpty = true
	opts.MaxShare = 0.5 // an allowed empty render is not limited by the share
	res, err := prune(t, c, New(a), New(), opts)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if got := actions(res)[a.ID.String()]; got != ActionPruned || exists(t, a) {
		t.Errorf("with AllowEmpty: action %q, exists %v; want pruned and gone", got, exists(t, a))
	}
	if res.Remaining.Len() != 0 {
		t.Errorf("Remaining = %v, want empty", res.Remaining.Entries)
	}
}

func TestNoPruneUnlessSyncSucceeded(t *testing.T) {
	ns := env.Namespace(t)
	a, b := ours(t, ns, "a"), ours(t, ns, "b")
	opts := testOptions(t, ns)
	opts.SyncSucceeded = false
	_, err := Plan(context.Background(), watchClient(t), New(a, b), New(a), opts)
	if !errors.Is(err, ErrSyncIncomplete) {
		t.Fatalf("Plan after a failed sync = %v, want ErrSyncIncomplete", err)
	}
	if !exists(t, b) {
		t.Fatal("object deleted after a failed sync")
	}
}

func TestPruneLimit(t *testing.T) {
	ns := env.Namespace(t)
	c := watchClient(t)
	var all []Entry
	for _, name := range []string{"a", "b", "c", "d"} {
		all = append(all, ours(t, ns, name))
	}
	opts := testOptions(t, ns)
	opts.MaxShare, opts.MaxShareMinStale = 0.5, 0

	_, err := Plan(context.Background(), c, New(all...), New(all[0]), opts)
	var refused *RefusedError
	if !errors.Is(err, ErrPruneLimit) || !errors.As(err, &refused) {
		t.Fatalf("Plan pruning 3 of 4 = %v, want ErrPruneLimit", err)
	}
	if refused.Stale != 3 || refused.Total != 4 || refused.MaxShare != 0.5 {
		t.Errorf("counts: stale %d of %d at %v, want 3 of 4 at 0.5", refused.Stale, refused.Total, refused.MaxShare)
	}
	for _, e := range all {
		if !exists(t, e) {
			t.Errorf("%s deleted although the prune was refused", e.ID)
		}
	}
}

// TestPruneRechecksOnConflict: an object relabelled after the plan read it
// fails the resourceVersion precondition, is read again and kept; one that
// only changed otherwise is deleted.
func TestPruneRechecksOnConflict(t *testing.T) {
	ns := env.Namespace(t)
	c := watchClient(t)
	ctx := context.Background()
	anchor, taken, touched := ours(t, ns, "anchor"), ours(t, ns, "taken"), ours(t, ns, "touched")
	plan, err := Plan(ctx, c, New(anchor, taken, touched), New(anchor), testOptions(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	patch := func(e Entry, labels map[string]string, data map[string]string) {
		t.Helper()
		obj := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: e.ID.Name}, obj); err != nil {
			t.Fatal(err)
		}
		orig := obj.DeepCopy()
		for k, v := range labels {
			obj.Labels[k] = v
		}
		obj.Data = data
		if err := c.Patch(ctx, obj, client.MergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
	}
	patch(taken, map[string]string{v1.LabelName: "someone-else"}, nil)
	patch(touched, nil, map[string]string{"k": "v"})

	res, err := plan.Execute(ctx, c)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	want := map[string]Action{"ConfigMap/" + ns + "/taken": ActionKept, "ConfigMap/" + ns + "/touched": ActionPruned}
	if diff := cmp.Diff(want, actions(res)); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if !exists(t, taken) {
		t.Error("an object relabelled after the plan was deleted")
	}
}

func TestDryRunDeletesNothing(t *testing.T) {
	ns := env.Namespace(t)
	c := watchClient(t)
	a, b := ours(t, ns, "a"), ours(t, ns, "b")
	opts := testOptions(t, ns)
	opts.DryRun = true
	res, err := prune(t, c, New(a, b), New(a), opts)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if got := actions(res)[b.ID.String()]; got != ActionPruned || !exists(t, b) {
		t.Errorf("dry run: action %q, exists %v; want pruned (would be) and still there", got, exists(t, b))
	}
	if diff := cmp.Diff([]Entry{a, b}, res.Remaining.Entries); diff != "" {
		t.Errorf("Remaining after a dry run (-want +got):\n%s", diff)
	}
}
