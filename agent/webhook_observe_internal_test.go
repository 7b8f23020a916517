package agent

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestEventLimiter: one WebhookRejected event per GitSync per interval,
// whatever the number of bad requests; keys do not share an interval, and
// keys past their interval are forgotten, so memory follows the GitSyncs
// named in the last minute.
//
// Checked by making allow always return true: the "again within" steps fail.
func TestEventLimiter(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l := newEventLimiter(clk, time.Minute)
	steps := []struct {
		name  string
		after time.Duration
		key   string
		want  bool
	}{
		{"first bad request", 0, "ns/a", true},
		{"again within the minute", 59 * time.Second, "ns/a", false},
		{"another GitSync", 0, "ns/b", true},
		{"after the minute", time.Second, "ns/a", true},
		{"again within the new minute", 30 * time.Second, "ns/a", false},
	}
	for _, s := range steps {
		clk.SetTime(clk.Now().Add(s.after))
		if got := l.allow(s.key); got != s.want {
			t.Errorf("%s: allow(%s) = %t, want %t", s.name, s.key, got, s.want)
		}
	}
	clk.SetTime(clk.Now().Add(2 * time.Minute))
	l.allow("ns/c")
	if len(l.last) != 1 {
		t.Errorf("limiter holds %d keys after their minutes passed, want 1", len(l.last))
	}
}
