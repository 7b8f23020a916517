package shard

import (
	"fmt"
	"testing"
)

func keys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("team-%d/app-%d", i%17, i)
	}
	return out
}

func shares(members, keys []string) map[string]int {
	got := map[string]int{}
	for _, k := range keys {
		got[Owner(members, k)]++
	}
	return got
}

// TestOwnerSpread: 1,000 keys over three replicas named as pods are, each
// within ±15 % of a third, for several sets of names.
func TestOwnerSpread(t *testing.T) {
	ks := keys(1000)
	for _, members := range [][]string{
		{"gitsync-shard-gitsync-7c9d-aa01", "gitsync-shard-gitsync-7c9d-aa02", "gitsync-shard-gitsync-7c9d-aa03"},
		{"a", "b", "c"},
		{"gitsync-shard-x-1f2e3d4c", "gitsync-shard-y-00000000", "gitsync-shard-z-ffffffff"},
	} {
		for m, n := range shares(members, ks) {
			if n < 283 || n > 383 {
				t.Errorf("members %v: %s owns %d of 1000 keys, want 333 ± 15 %%", members, m, n)
			}
		}
	}
}

// TestOwnerMovesOnlyOneShare: a member joining takes keys only from the
// others (never moves a key between two old members), and leaving again
// gives each key back to its former owner.
func TestOwnerMovesOnlyOneShare(t *testing.T) {
	ks := keys(1000)
	old := []string{"r1", "r2", "r3"}
	joined := []string{"r1", "r2", "r3", "r4"}
	moved := 0
	for _, k := range ks {
		before, after := Owner(old, k), Owner(joined, k)
		if before != after {
			moved++
			if after != "r4" {
				t.Fatalf("%s moved from %s to %s when r4 joined", k, before, after)
			}
		}
	}
	if moved < 200 || moved > 300 {
		t.Errorf("r4 took %d of 1000 keys, want about a quarter", moved)
	}
}

func TestOwnerIgnoresOrder(t *testing.T) {
	for _, k := range keys(200) {
		if a, b := Owner([]string{"x", "y", "z"}, k), Owner([]string{"z", "x", "y"}, k); a != b {
			t.Fatalf("%s: owner %s for one order, %s for another", k, a, b)
		}
	}
	if got := Owner(nil, "a/b"); got != "" {
		t.Errorf("Owner(nil) = %q, want empty", got)
	}
}
