package shard

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestViewMayRun(t *testing.T) {
	abc := []string{"a", "b", "c"}
	ab := []string{"a", "b"}
	// k is c's among a, b, c and a's among a, b: it moves from c to a when c
	// leaves.
	var k string
	for _, key := range keys(1000) {
		if Owner(abc, key) == "c" && Owner(ab, key) == "a" {
			k = key
			break
		}
	}
	for _, tc := range []struct {
		name string
		v    *view
		want bool
	}{
		{"owner in published and next view, nobody else claims", &view{self: "a", valid: true, acked: ab, next: ab, others: map[string][]string{"b": ab}}, true},
		{"not yet published", &view{self: "a", valid: true, acked: abc, next: ab, others: map[string][]string{"b": ab}}, false},
		{"published, but the next view gives it away", &view{self: "a", valid: true, acked: ab, next: abc, others: map[string][]string{"b": ab}}, false},
		{"the old owner still publishes a view where it owns k", &view{self: "a", valid: true, acked: ab, next: ab, others: map[string][]string{"b": ab, "c": abc}}, false},
		{"the old owner published a view without k", &view{self: "a", valid: true, acked: ab, next: ab, others: map[string][]string{"b": ab, "c": ab}}, true},
		{"another replica has published nothing yet", &view{self: "a", valid: true, acked: ab, next: ab, others: map[string][]string{"b": nil}}, true},
		{"renewal deadline missed", &view{self: "a", valid: false, acked: ab, next: ab}, false},
		{"no view", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.v.mayRun(k); got != tc.want {
				t.Errorf("mayRun(%s) = %v, want %v", k, got, tc.want)
			}
		})
	}
}

// TestViewsNeverGrantTwice: for every pair of replicas' published lists
// (any subset of members each), and each key, at most one replica whose own
// list gives it the key sees no other claim: the check every Acquire makes.
func TestViewsNeverGrantTwice(t *testing.T) {
	all := []string{"a", "b", "c", "d"}
	var subsets [][]string
	for mask := 1; mask < 1<<len(all); mask++ {
		var s []string
		for i, m := range all {
			if mask&(1<<i) != 0 {
				s = append(s, m)
			}
		}
		subsets = append(subsets, s)
	}
	for _, k := range keys(50) {
		for _, la := range subsets {
			for _, lb := range subsets {
				a := &view{self: "a", valid: true, acked: la, next: la, others: map[string][]string{"b": lb}}
				b := &view{self: "b", valid: true, acked: lb, next: lb, others: map[string][]string{"a": la}}
				if a.mayRun(k) && b.mayRun(k) {
					t.Fatalf("%s runs on a (%v) and b (%v)", k, la, lb)
				}
			}
		}
	}
}

func TestLiveness(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLiveness(15 * time.Second)
	if got := l.observe(start, map[string]string{"a": "1", "b": "7"}); !cmp.Equal(got, []string{"a", "b"}) {
		t.Fatalf("first sight: live %v, want both (a Lease seen for the first time counts from now)", got)
	}
	// a renews (new resourceVersion), b does not.
	if got := l.observe(start.Add(14*time.Second), map[string]string{"a": "2", "b": "7"}); !cmp.Equal(got, []string{"a", "b"}) {
		t.Fatalf("14s: live %v, want both", got)
	}
	if got := l.observe(start.Add(15*time.Second), map[string]string{"a": "2", "b": "7"}); !cmp.Equal(got, []string{"a"}) {
		t.Fatalf("15s: live %v, want only a (b unchanged for a lease duration)", got)
	}
	if got := l.expiredFor(start.Add(20*time.Second), "b"); got != 5*time.Second {
		t.Errorf("b expired for %s at 20s, want 5s", got)
	}
	if got := l.observe(start.Add(16*time.Second), map[string]string{"a": "2", "b": "8"}); !cmp.Equal(got, []string{"a", "b"}) {
		t.Fatalf("b renewed again: live %v, want both", got)
	}
	if got := l.observe(start.Add(17*time.Second), map[string]string{"b": "8"}); !cmp.Equal(got, []string{"b"}) {
		t.Fatalf("a's Lease deleted: live %v, want b", got)
	}
}

func TestMembersRoundTrip(t *testing.T) {
	if got := parseMembers(formatMembers([]string{"c", "a", "b", "a", ""})); !cmp.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("round trip = %v", got)
	}
	if got := parseMembers(""); got != nil {
		t.Errorf("parseMembers(\"\") = %v, want nil", got)
	}
}
