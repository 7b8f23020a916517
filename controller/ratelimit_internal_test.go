package controller

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestBackoffGlobalBucket: 1,000 GitSyncs failing at the same instant do
// not all retry after the first backoff: at most RetryBurst + RetryQPS × t
// of them are due within t, whatever their own backoff says; a GitSync's
// retryInterval cap never lets it skip its turn; jitter spreads equal
// delays.
//
// Checked by setting RetryQPS to 0 (no bucket): all 1,000 are due after
// one second and the bound fails at every t.
func TestBackoffGlobalBucket(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l := Limits{RetryQPS: 10, RetryBurst: 100, RetryJitter: 0.2}
	b := newBackoff(time.Second, 24*time.Hour, l, clk)
	b.setCap(types.NamespacedName{Namespace: "ns", Name: "gs-999"}, 2*time.Second)
	var delays []time.Duration
	for i := range 1000 {
		delays = append(delays, b.When(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("gs-", i)}}))
	}
	slices.Sort(delays)
	for _, at := range []time.Duration{time.Second, 2 * time.Second, 10 * time.Second, 60 * time.Second} {
		due, _ := slices.BinarySearch(delays, at+1)
		bound := l.RetryBurst + int(l.RetryQPS*at.Seconds())
		if due > bound {
			t.Errorf("%d retries due within %v, want at most %d (burst + qps × t)", due, at, bound)
		}
	}
	if last := delays[len(delays)-1]; last < 89*time.Second {
		t.Errorf("last retry after %v: the bucket should spread 1,000 retries over ~90 s", last)
	}
	if delays[0] < time.Second {
		t.Errorf("first retry after %v, want at least the exponential backoff's 1 s", delays[0])
	}
	if delays[0] == delays[99] {
		t.Errorf("the burst's 100 retries all wait %v: jitter should spread them", delays[0])
	}
}
