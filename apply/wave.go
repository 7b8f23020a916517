package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// Waves order the objects of one Apply after the built-in stages. An object
// annotated gitsync.dev/wave: "N" (an integer, negative allowed, default 0)
// is applied only after every object of a lower wave was applied without
// failure; objects of one wave are applied in parallel. The kinds of the
// first stage (CRDs, Namespaces, cluster classes and roles) are applied
// before every wave whatever their annotation says: they are what the
// others need, and the annotation on them is still checked.
//
// A wave with a failed or skipped object stops the Apply: the objects of
// later waves are skipped, naming it. Between two waves a WaveGate may hold
// the rest back (the agent does while the earlier wave is not healthy and
// spec.wait is set); the held objects' entries then have no Action.

// WaveGate is asked, after every object of wave done applied and before
// wave next starts, whether to go on. It returns false to end the Apply
// there: the entries of the waves not applied keep an empty Action and the
// Apply returns no error. cs holds the entries so far, indexed like the
// objects given to Apply. A gate keeps its own reasons (a timeout, a failed
// health read) for its caller.
type WaveGate func(ctx context.Context, done, next int, cs *ChangeSet) bool

// WaveError reports objects whose gitsync.dev/wave annotation is not an
// integer. Nothing of the set was applied: applying it out of order could
// be the very thing the annotation was meant to prevent.
type WaveError struct {
	// Subjects and Values are the offending objects ("Kind/ns/name") and
	// their annotation values, in the order given.
	Subjects, Values []string
}

func (e *WaveError) Error() string {
	parts := make([]string, len(e.Subjects))
	for i, s := range e.Subjects {
		parts[i] = fmt.Sprintf("%s has an invalid %s annotation %q: want an integer", s, v1.AnnotationWave, e.Values[i])
	}
	return strings.Join(parts, "; ")
}

// WaveOf returns obj's wave: its gitsync.dev/wave annotation, 0 without one.
func WaveOf(obj *unstructured.Unstructured) (int, error) {
	raw, ok := obj.GetAnnotations()[v1.AnnotationWave]
	if !ok {
		return 0, nil
	}
	w, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 32)
	if err != nil {
		return 0, errors.New("not an integer")
	}
	return int(w), nil
}

// waves returns the objects at idx (the stage after the first) grouped by
// wave, lowest first, with the wave of each group; an invalid annotation on
// any object of objs is a *WaveError.
func waves(objs []*unstructured.Unstructured, entries []Entry, idx []int) ([]int, [][]int, error) {
	var bad WaveError
	waveOf := make([]int, len(objs))
	for i, obj := range objs {
		w, err := WaveOf(obj)
		if err != nil {
			bad.Subjects = append(bad.Subjects, entries[i].Subject)
			bad.Values = append(bad.Values, obj.GetAnnotations()[v1.AnnotationWave])
		}
		waveOf[i] = w
	}
	if len(bad.Subjects) > 0 {
		return nil, nil, &bad
	}
	byWave := map[int][]int{}
	for _, i := range idx {
		byWave[waveOf[i]] = append(byWave[waveOf[i]], i)
	}
	order := make([]int, 0, len(byWave))
	for w := range byWave {
		order = append(order, w)
	}
	slices.Sort(order)
	groups := make([][]int, len(order))
	for k, w := range order {
		groups[k] = byWave[w]
	}
	return order, groups, nil
}

// applyWaves applies the groups in order, stopping after a group with a
// failed or skipped object (later groups are skipped, naming the wave) or
// when gate says so (later groups stay unreached).
func (r *run) applyWaves(ctx context.Context, order []int, groups [][]int, blocked map[schema.GroupKind]string, gate WaveGate) error {
	for k, idx := range groups {
		if err := r.stage(ctx, idx, blocked); err != nil {
			return err
		}
		if k+1 == len(groups) {
			return nil
		}
		if r.failedIn(idx) {
			r.skipAfter(order[k], groups[k+1:])
			return nil
		}
		if gate != nil && !gate(ctx, order[k], order[k+1], &ChangeSet{Entries: r.entries}) {
			return nil
		}
	}
	return nil
}

// failedIn reports whether an object at idx failed or was skipped.
func (r *run) failedIn(idx []int) bool {
	for _, i := range idx {
		if a := r.entries[i].Action; a == Failed || a == Skipped {
			return true
		}
	}
	return false
}

// skipAfter marks the objects of the later groups skipped because wave did
// not apply.
func (r *run) skipAfter(wave int, later [][]int) {
	for _, idx := range later {
		for _, i := range idx {
			e := &r.entries[i]
			e.Action = Skipped
			e.Err = fmt.Errorf("%s skipped: wave %d did not apply", e.Subject, wave)
			r.tick()
		}
	}
}
