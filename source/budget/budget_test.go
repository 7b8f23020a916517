package budget_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/source/budget"
)

func TestChargeRefusesBeforeThePassingCharge(t *testing.T) {
	tests := []struct {
		name     string
		limit    int64
		charges  []int64
		wantErrs []bool
		wantUsed int64
	}{
		{name: "under", limit: 10, charges: []int64{3, 3}, wantErrs: []bool{false, false}, wantUsed: 6},
		{name: "exactly the limit", limit: 10, charges: []int64{4, 6}, wantErrs: []bool{false, false}, wantUsed: 10},
		{name: "one past is refused and not charged", limit: 10, charges: []int64{4, 7, 6}, wantErrs: []bool{false, true, false}, wantUsed: 10},
		{name: "a huge charge is refused whole", limit: 10, charges: []int64{1 << 40}, wantErrs: []bool{true}, wantUsed: 0},
		{name: "zero and negative charge nothing", limit: 1, charges: []int64{0, -5, 1}, wantErrs: []bool{false, false, false}, wantUsed: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := budget.New(budget.Limits{OutputBytes: tt.limit})
			var gotErrs []bool
			for _, n := range tt.charges {
				err := b.Charge(budget.StageHelm, n)
				gotErrs = append(gotErrs, err != nil)
				if err != nil && !errors.Is(err, budget.ErrExceeded) {
					t.Errorf("Charge(%d) = %v, want an ErrExceeded", n, err)
				}
			}
			if diff := cmp.Diff(tt.wantErrs, gotErrs); diff != "" {
				t.Errorf("refusals (-want +got):\n%s", diff)
			}
			if got := b.Used(); got != tt.wantUsed {
				t.Errorf("Used() = %d, want %d", got, tt.wantUsed)
			}
		})
	}
}

func TestNilBudgetChargesNothing(t *testing.T) {
	var b *budget.Budget
	if err := b.Charge(budget.StagePlain, 1<<40); err != nil {
		t.Fatalf("nil Budget refused: %v", err)
	}
}

func TestExceededErrorMessage(t *testing.T) {
	b := budget.New(budget.Limits{OutputBytes: 16 << 20, Memory: 128 << 20, CPU: 20 * time.Second, Wall: 30 * time.Second})
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "output", err: b.Charge(budget.StageSubstitute, 17<<20), want: "substitution exceeded its output size budget (16 MiB, --render-output-bytes)"},
		{name: "memory", err: b.Exceeded(budget.StageRender, budget.Memory), want: "render exceeded its memory budget (128 MiB, --render-memory)"},
		{name: "cpu", err: b.Exceeded(budget.StageRender, budget.CPU), want: "render exceeded its CPU time budget (20s, --render-cpu)"},
		{name: "wall", err: b.Exceeded(budget.StageRender, budget.Wall), want: "render exceeded its deadline (30s, --render-timeout)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				t.Fatal("no error")
			}
			if diff := cmp.Diff(tt.want, tt.err.Error()); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			var ee *budget.ExceededError
			if !errors.As(tt.err, &ee) || !errors.Is(tt.err, budget.ErrExceeded) {
				t.Errorf("%v is not an *ExceededError matching ErrExceeded", tt.err)
			}
		})
	}
}

func TestReaderStopsAtTheLimit(t *testing.T) {
	b := budget.New(budget.Limits{OutputBytes: 1000})
	n, err := io.Copy(io.Discard, b.Reader(budget.StageRender, strings.NewReader(strings.Repeat("x", 5000))))
	if !errors.Is(err, budget.ErrExceeded) {
		t.Fatalf("Copy error = %v, want ErrExceeded", err)
	}
	if n > 1000 || b.Used() > 1000 {
		t.Errorf("read %d bytes, charged %d; want at most the 1000-byte limit", n, b.Used())
	}
}

func TestWriterWritesNothingPastTheLimit(t *testing.T) {
	b := budget.New(budget.Limits{OutputBytes: 10})
	var out bytes.Buffer
	w := b.Writer(budget.StageRender, &out)
	if _, err := w.Write([]byte("12345678")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("abc")); !errors.Is(err, budget.ErrExceeded) {
		t.Fatalf("second Write error = %v, want ErrExceeded", err)
	}
	if diff := cmp.Diff("12345678", out.String()); diff != "" {
		t.Errorf("written (-want +got):\n%s", diff)
	}
}

func TestChargeIsSafeForConcurrentUse(t *testing.T) {
	b := budget.New(budget.Limits{OutputBytes: 1000})
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := int64(0)
	for range 8 {
		wg.Go(func() {
			for range 500 {
				if b.Charge(budget.StagePlain, 1) == nil {
					mu.Lock()
					accepted++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if accepted != 1000 || b.Used() != 1000 {
		t.Errorf("accepted %d charges, used %d; want exactly the limit, 1000", accepted, b.Used())
	}
}
