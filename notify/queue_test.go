package notify_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"gitsync.dev/gitsync/notify"
)

var appKey = types.NamespacedName{Namespace: "ns", Name: "app"}

func item(to, reason string) notify.Item {
	return notify.Item{Key: appKey, To: notify.Destination{Provider: "webhook", Secret: to},
		Event: notify.Event{Namespace: "ns", Name: "app", State: notify.Failed, Reason: reason}}
}

// waitForTimer returns once the queue's sender waits on fc: its bucket is
// empty, so it cannot be sending. A sender that never waits fails the test.
func waitForTimer(t *testing.T, fc *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !fc.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the sender never waited for its bucket")
		}
		runtime.Gosched()
	}
}

func sentReason(t *testing.T, sent chan notify.Item) string {
	t.Helper()
	select {
	case it := <-sent:
		return it.To.Secret + ":" + it.Event.Reason
	case <-time.After(30 * time.Second):
		t.Fatal("nothing sent")
	}
	return ""
}

// TestQueueRateLimit: a destination gets Burst notifications at once, then
// one per Every of the clock; one destination's empty bucket holds no other
// destination; while limited the newest MaxQueued wait and the oldest is
// dropped and reported.
func TestQueueRateLimit(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC))
	sent := make(chan notify.Item, 16)
	dropped := make(chan notify.Item, 16)
	q := notify.NewQueue(notify.QueueOptions{
		Send: func(_ context.Context, it notify.Item) error { sent <- it; return nil },
		Failed: func(it notify.Item, err error) {
			if errors.As(err, new(notify.DroppedError)) {
				dropped <- it
			}
		},
		Limit: notify.Limit{Burst: 2, Every: time.Minute}, MaxQueued: 2, Clock: fc,
	})
	q.Add(item("a", "r1"))
	q.Add(item("a", "r2"))
	for _, want := range []string{"a:r1", "a:r2"} {
		if got := sentReason(t, sent); got != want {
			t.Fatalf("sent %s, want %s", got, want)
		}
	}
	q.Add(item("a", "r3"))
	waitForTimer(t, fc)
	if len(sent) != 0 {
		t.Fatal("a third notification went out within the burst's minute")
	}
	q.Add(item("a", "r4"))
	q.Add(item("a", "r5")) // drops r3
	select {
	case it := <-dropped:
		if it.Event.Reason != "r3" {
			t.Errorf("dropped %s, want the oldest waiting (r3)", it.Event.Reason)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no drop reported")
	}

	// Another destination of the same GitSync has a bucket of its own.
	q.Add(item("b", "r1"))
	if got := sentReason(t, sent); got != "b:r1" {
		t.Fatalf("sent %s, want b:r1 while a is limited", got)
	}

	for _, want := range []string{"a:r4", "a:r5"} {
		waitForTimer(t, fc)
		if len(sent) != 0 {
			t.Fatalf("sent before the clock moved")
		}
		fc.Step(time.Minute)
		if got := sentReason(t, sent); got != want {
			t.Fatalf("sent %s, want %s", got, want)
		}
	}
}

// TestQueueFailedSend: a failed send is reported once and not sent again.
func TestQueueFailedSend(t *testing.T) {
	sent := make(chan notify.Item, 4)
	failed := make(chan error, 4)
	q := notify.NewQueue(notify.QueueOptions{
		Send:   func(_ context.Context, it notify.Item) error { sent <- it; return fmt.Errorf("down") },
		Failed: func(_ notify.Item, err error) { failed <- err },
	})
	q.Add(item("a", "r1"))
	q.Add(item("a", "r2"))
	for _, want := range []string{"a:r1", "a:r2"} {
		if got := sentReason(t, sent); got != want {
			t.Fatalf("sent %s, want %s (a failed one is not sent again)", got, want)
		}
		if err := <-failed; err.Error() != "down" {
			t.Errorf("failed with %v", err)
		}
	}
}
