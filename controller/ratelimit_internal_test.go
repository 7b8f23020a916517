package controller

import (
	"context"
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

// TestHostLimit: at most n requests to one host at once; another host is
// not held back by it; a caller that gives up waiting gets an error and
// takes no slot.
//
// Checked by making acquire return at once: the third acquire succeeds.
func TestHostLimit(t *testing.T) {
	h := newHostLimit(2)
	ctx := context.Background()
	r1, err1 := h.acquire(ctx, "https://git.example.com/a.git")
	r2, err2 := h.acquire(ctx, "https://git.example.com:443/b.git")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := h.acquire(gone, "https://GIT.example.com/c.git"); err == nil {
		t.Fatal("a third request to a host with 2 slots taken got a slot")
	}
	r3, err := h.acquire(gone, "ssh://git@git.example.com/a.git") // another port and scheme
	if err != nil {
		// gone is cancelled; with a free slot select may still pick either.
		r3, err = h.acquire(ctx, "ssh://git@git.example.com/a.git")
	}
	if err != nil {
		t.Fatalf("another host was held back: %v", err)
	}
	r3()
	r1()
	r4, err := h.acquire(ctx, "https://git.example.com/d.git")
	if err != nil {
		t.Fatalf("a released slot was not reusable: %v", err)
	}
	r4()
	r2()
	if len(h.hosts) != 0 {
		t.Errorf("idle hosts kept: %v", h.hosts)
	}
}
