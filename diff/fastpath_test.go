package diff_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/diff"
)

// localDiffer has no client: Diff answers only what it can decide locally
// and fails with ErrNoClient where the server would have to judge.
func localDiffer(t testing.TB) *diff.Differ {
	t.Helper()
	d, err := diff.New(nil, diff.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// decidedInSync reports whether Diff decided in-sync locally; an error other
// than "needs a dry-run" fails the test.
func decidedInSync(t *testing.T, d *diff.Differ, desired, live *unstructured.Unstructured) bool {
	t.Helper()
	res, err := d.Diff(context.Background(), desired, live)
	if errors.Is(err, diff.ErrNoClient) {
		return false
	}
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	return res.Verdict == diff.InSync
}

func TestFastPathFixturesInSync(t *testing.T) {
	d := localDiffer(t)
	for _, f := range fastPathFixtures {
		desired, live := loadPair(t, f.name)
		if !decidedInSync(t, d, desired, live) {
			t.Errorf("%s: not decided in sync locally", f.name)
		}
	}
}

// TestFastPathNeverMissesAChange mutates every field of each in-sync fixture,
// in the desired object and in the live one, and requires that the local path
// never answers in-sync for any of them.
func TestFastPathNeverMissesAChange(t *testing.T) {
	d := localDiffer(t)
	for _, f := range fastPathFixtures {
		desired, live := loadPair(t, f.name)
		n := 0
		for _, m := range mutations(desired.Object, nil) {
			n++
			mutated := desired.DeepCopy()
			mutated.Object = m.apply(mutated.Object)
			if decidedInSync(t, d, mutated, live) {
				t.Errorf("%s: desired %s still decided in sync", f.name, m.name)
			}
			if !m.leaf {
				continue
			}
			// The same change made in the live object (managedFields kept).
			if mutatedLive, ok := m.applyAt(live.DeepCopy().Object); ok {
				if decidedInSync(t, d, desired, &unstructured.Unstructured{Object: mutatedLive}) {
					t.Errorf("%s: live %s still decided in sync", f.name, m.name)
				}
			}
		}
		if n < 10 {
			t.Errorf("%s: only %d mutations generated", f.name, n)
		}
		t.Logf("%s: %d mutations, none decided in sync", f.name, n)
	}
}

// mutation is one change to a JSON-shaped object.
type mutation struct {
	name string
	path []any // map keys (string) and list indexes (int)
	leaf bool  // a scalar changed in place; the same change applies to live
	edit func(parent any, last any) any
}

func (m mutation) apply(obj map[string]any) map[string]any {
	out, _ := m.applyAt(obj)
	return out
}

// applyAt applies the mutation to obj if its path exists there.
func (m mutation) applyAt(obj map[string]any) (map[string]any, bool) {
	var cur any = obj
	for _, p := range m.path[:len(m.path)-1] {
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[p.(string)]
			if !ok {
				return obj, false
			}
			cur = next
		case []any:
			i := p.(int)
			if i >= len(c) {
				return obj, false
			}
			cur = c[i]
		default:
			return obj, false
		}
	}
	last := m.path[len(m.path)-1]
	if c, ok := cur.(map[string]any); ok {
		if _, present := c[last.(string)]; !present && m.leaf {
			return obj, false
		}
	}
	replaced := m.edit(cur, last)
	if len(m.path) == 1 {
		return replaced.(map[string]any), true
	}
	return obj, true
}

// skipped paths carry identity or server bookkeeping, not content.
func skipped(path []any) bool {
	if len(path) == 1 && (path[0] == "apiVersion" || path[0] == "kind") {
		return true
	}
	return len(path) == 2 && path[0] == "metadata" && (path[1] == "name" || path[1] == "namespace" || path[1] == "creationTimestamp")
}

// mutations lists, for every field under v: deleting it, changing it (leaves),
// adding a sibling (maps), dropping the last item and reversing (lists).
func mutations(v any, path []any) []mutation {
	var out []mutation
	at := func(extra any) []any { return append(append([]any{}, path...), extra) }
	switch v := v.(type) {
	case map[string]any:
		if len(path) > 0 {
			out = append(out, mutation{name: fmt.Sprintf("%v gains a field", path), path: path, edit: editSelf(func(x any) any {
				m := x.(map[string]any)
				m["zz-added"] = "v"
				return m
			})})
		}
		for k, child := range v {
			p := at(k)
			if skipped(p) {
				continue
			}
			out = append(out, mutation{name: fmt.Sprintf("%v deleted", p), path: p, edit: func(parent, last any) any {
				delete(parent.(map[string]any), last.(string))
				return parent
			}})
			out = append(out, mutations(child, p)...)
		}
	case []any:
		out = append(out, mutation{name: fmt.Sprintf("%v loses its last item", path), path: path, edit: editSelf(func(x any) any {
			l := x.([]any)
			return l[:len(l)-1]
		})})
		if len(v) > 1 {
			out = append(out, mutation{name: fmt.Sprintf("%v reversed", path), path: path, edit: editSelf(func(x any) any {
				l := x.([]any)
				r := make([]any, len(l))
				for i := range l {
					r[len(l)-1-i] = l[i]
				}
				return r
			})})
		}
		for i, child := range v {
			out = append(out, mutations(child, at(i))...)
		}
	default:
		out = append(out, mutation{name: fmt.Sprintf("%v changed", path), path: path, leaf: true, edit: editSelf(changed)})
	}
	return out
}

// editSelf turns a function of a value into an edit of its parent slot.
func editSelf(f func(any) any) func(parent, last any) any {
	return func(parent, last any) any {
		switch p := parent.(type) {
		case map[string]any:
			p[last.(string)] = f(p[last.(string)])
		case []any:
			p[last.(int)] = f(p[last.(int)])
		}
		return parent
	}
}

func changed(v any) any {
	switch v := v.(type) {
	case string:
		return v + "-changed"
	case int64:
		return v + 1
	case float64:
		return v + 0.5
	case bool:
		return !v
	case nil:
		return "was-null"
	}
	return fmt.Sprintf("%v-changed", v)
}

func BenchmarkDiffInSync(b *testing.B) {
	d := localDiffer(b)
	for _, f := range fastPathFixtures {
		desired, live := loadPair(b, f.name)
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := d.Diff(context.Background(), desired, live)
				if err != nil || res.Verdict != diff.InSync {
					b.Fatalf("Diff = %+v, %v; want in-sync locally", res, err)
				}
			}
		})
	}
}

// BenchmarkDiffDryRun is the price the fast path avoids: a Diff decided by a
// server-side dry-run against the test apiserver (memo off).
func BenchmarkDiffDryRun(b *testing.B) {
	ns := env.Namespace(b)
	c, _ := countingClient(b)
	d, err := diff.New(c, diff.Options{FieldManager: "gitsync"})
	if err != nil {
		b.Fatal(err)
	}
	desired := decode(b, strings.Replace(deployment, "cpu: 500m", `cpu: "0.5"`, 1), ns)
	live := applyAs(b, desired, "gitsync")
	b.ReportAllocs()
	for b.Loop() {
		res, err := d.Diff(context.Background(), desired, live)
		if err != nil || res.Verdict != diff.InSync || !res.DryRun {
			b.Fatalf("Diff = %+v, %v; want in-sync by dry-run", res, err)
		}
	}
}

// BenchmarkDiffMemoised is a Diff answered by the memo of an earlier dry-run.
func BenchmarkDiffMemoised(b *testing.B) {
	ns := env.Namespace(b)
	c, ct := countingClient(b)
	d, err := diff.New(c, diff.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	desired := decode(b, strings.Replace(deployment, "cpu: 500m", `cpu: "0.5"`, 1), ns)
	live := applyAs(b, desired, "gitsync")
	if _, err := d.Diff(context.Background(), desired, live); err != nil {
		b.Fatal(err)
	}
	before := ct.All.Load()
	b.ReportAllocs()
	for b.Loop() {
		res, err := d.Diff(context.Background(), desired, live)
		if err != nil || !res.Memoised {
			b.Fatalf("Diff = %+v, %v; want memoised", res, err)
		}
	}
	if n := ct.All.Load() - before; n != 0 {
		b.Fatalf("memoised Diffs made %d requests", n)
	}
}
