package substitute_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/substitute"
)

// TestSubstitutionBomb: a 1 MB variable used 700 times in a 4 KB manifest
// (issue 24: 3.1 GiB) is refused at the charge that passes the budget,
// before the string that would pass it is built, whether the references
// share one value or fill 700 fields. What the refusal allocated stays near
// the budget (16 MiB), far from the 700 MB the expansion would take.
//
// Checked by removing the Charge in expand: every case then expands to
// 700 MB and fails here.
func TestSubstitutionBomb(t *testing.T) {
	oneField := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  v: \"" + strings.Repeat("${BIG}", 700) + "\"\n"
	var fields strings.Builder
	for i := range 700 {
		fmt.Fprintf(&fields, " %x: ${BIG}\n", i)
	}
	manyFields := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n" + fields.String()
	tests := []struct{ name, manifest string }{
		{name: "700 references in one value", manifest: oneField},
		{name: "one reference in each of 700 values", manifest: manyFields},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.manifest) > 10<<10 {
				t.Fatalf("manifest of %d bytes, want a small one", len(tt.manifest))
			}
			o := obj(t, tt.manifest)
			v := vars("BIG", strings.Repeat("x", 1<<20))
			b := budget.New(budget.DefaultLimits())
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := substitute.Objects([]*unstructured.Unstructured{o}, v, substitute.Options{Strict: true, Budget: b})
			runtime.ReadMemStats(&after)
			var be *substitute.BudgetError
			var ee *budget.ExceededError
			if !errors.As(err, &be) || !errors.As(err, &ee) || ee.Resource != budget.Output || ee.Stage != budget.StageSubstitute {
				t.Fatalf("error %v, want a *substitute.BudgetError with the substitution's output refusal", err)
			}
			if strings.Contains(err.Error(), "xxxx") {
				t.Errorf("error quotes the value: %.200s", err)
			}
			limit := b.Limits().OutputBytes
			if got := after.TotalAlloc - before.TotalAlloc; got > uint64(3*limit) {
				t.Errorf("the refusal allocated %d MiB, want it near the %d MiB budget", got>>20, limit>>20)
			}
			if b.Used() > limit {
				t.Errorf("charged %d bytes, over the budget of %d", b.Used(), limit)
			}
		})
	}
}
