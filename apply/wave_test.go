package apply_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
)

// waveCM is a ConfigMap in wave (no annotation when wave is "").
func waveCM(t *testing.T, ns, name, wave string) *unstructured.Unstructured {
	t.Helper()
	u := cm(t, ns, name, nil)
	if wave != "" {
		u.SetAnnotations(map[string]string{v1.AnnotationWave: wave})
	}
	return u
}

// exists reports which of objs the apiserver has, by name.
func exists(t *testing.T, objs ...*unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for _, o := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(o), live)
		switch {
		case err == nil:
			out = append(out, o.GetName())
		case !apierrors.IsNotFound(err):
			t.Fatal(err)
		}
	}
	return out
}

func TestWaveOf(t *testing.T) {
	tests := []struct {
		name, value string
		want        int
		wantErr     bool
	}{
		{"none", "", 0, false},
		{"positive", "3", 3, false},
		{"negative with spaces", " -2 ", -2, false},
		{"word", "soon", 0, true},
		{"fraction", "1.5", 0, true},
		{"beyond int32", "99999999999", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if tt.name != "none" {
				u.SetAnnotations(map[string]string{v1.AnnotationWave: tt.value})
			}
			got, err := apply.WaveOf(u)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("WaveOf(%q) = %d, %v; want %d, error %v", tt.value, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestWavesOrderApplies: objects are applied wave by wave, lowest first,
// whatever their order in the set: when the gate is asked after a wave,
// exactly the objects of that wave and the earlier ones exist.
func TestWavesOrderApplies(t *testing.T) {
	ns := env.Namespace(t)
	f := newFixture(t, apply.DefaultOptions())
	late, first, early := waveCM(t, ns, "late", "2"), waveCM(t, ns, "first", ""), waveCM(t, ns, "early", "-1")
	objs := []*unstructured.Unstructured{late, first, early}
	var seen []string
	gate := func(_ context.Context, done, next int, cs *apply.ChangeSet) bool {
		seen = append(seen, fmt.Sprintf("%d->%d: %s", done, next, strings.Join(exists(t, objs...), ",")))
		return true
	}
	cs, err := f.applier.ApplyWaves(context.Background(), objs, gate)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-1->0: early", "0->2: first,early"}
	if d := cmp.Diff(want, seen); d != "" {
		t.Errorf("objects existing when the gate was asked (-want +got):\n%s", d)
	}
	for _, e := range cs.Entries {
		if e.Action != apply.Created {
			t.Errorf("%s %s, want created", e.Subject, e.Action)
		}
	}
}

// TestWaveGateHolds: a gate that says no ends the Apply after the wave:
// the later objects are not applied and their entries have no action.
func TestWaveGateHolds(t *testing.T) {
	ns := env.Namespace(t)
	f := newFixture(t, apply.DefaultOptions())
	now, later := waveCM(t, ns, "now", "0"), waveCM(t, ns, "later", "1")
	cs, err := f.applier.ApplyWaves(context.Background(), []*unstructured.Unstructured{later, now},
		func(context.Context, int, int, *apply.ChangeSet) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]apply.Action{"ConfigMap/" + ns + "/now": apply.Created, "ConfigMap/" + ns + "/later": ""}
	if d := cmp.Diff(want, actions(cs)); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	if got := exists(t, later); len(got) != 0 {
		t.Errorf("held wave applied: %v exist", got)
	}
}

// TestFailedWaveStopsLaterWaves: an object of wave 0 the apiserver refuses
// keeps wave 1 from being applied; its objects are skipped naming the wave.
func TestFailedWaveStopsLaterWaves(t *testing.T) {
	ns := env.Namespace(t)
	f := newFixture(t, apply.DefaultOptions())
	bad := waveCM(t, ns, "bad", "")
	bad.Object["data"] = map[string]any{"a": map[string]any{"not": "a string"}}
	next := waveCM(t, ns, "next", "1")
	cs, err := f.applier.Apply(context.Background(), []*unstructured.Unstructured{bad, next})
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(t, cs, "ConfigMap/"+ns+"/bad"); e.Action != apply.Failed {
		t.Fatalf("bad: %s (%v), want failed", e.Action, e.Err)
	}
	e := entry(t, cs, "ConfigMap/"+ns+"/next")
	if e.Action != apply.Skipped || e.Err == nil || !strings.Contains(e.Err.Error(), "wave 0 did not apply") {
		t.Errorf("next: %s (%v), want skipped because wave 0 did not apply", e.Action, e.Err)
	}
	if got := exists(t, next); len(got) != 0 {
		t.Errorf("wave 1 applied after wave 0 failed: %v exist", got)
	}
}

// TestInvalidWaveAppliesNothing: one invalid annotation refuses the whole
// set with an error naming the object and the value.
func TestInvalidWaveAppliesNothing(t *testing.T) {
	ns := env.Namespace(t)
	f := newFixture(t, apply.DefaultOptions())
	good, bad := waveCM(t, ns, "good", ""), waveCM(t, ns, "bad", "first")
	_, err := f.applier.Apply(context.Background(), []*unstructured.Unstructured{good, bad})
	var we *apply.WaveError
	if !errors.As(err, &we) {
		t.Fatalf("Apply error = %v, want a *WaveError", err)
	}
	want := `ConfigMap/` + ns + `/bad has an invalid gitsync.dev/wave annotation "first": want an integer`
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if got := exists(t, good, bad); len(got) != 0 {
		t.Errorf("applied despite an invalid wave: %v", got)
	}
}
