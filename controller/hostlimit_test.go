package controller_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/controller"
	"gitsync.dev/gitsync/internal/gittest"
)

// createOnDeadHost creates n GitSyncs, each on its own repository of the
// host at base, and returns when all have been reconciled once (Ready
// False).
func createOnDeadHost(t *testing.T, c client.Client, ns, base string, n int, mutate ...func(*v1.GitSync)) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		gs := newGitSync(ns, fmt.Sprint("app-", i), fmt.Sprintf("%s/repo-%d.git", base, i), mutate...)
		if err := c.Create(ctx, gs); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every GitSync tried once", func(ctx context.Context) (bool, error) {
		list := &v1.GitSyncList{}
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		failed := 0
		for _, gs := range list.Items {
			if meta.IsStatusConditionFalse(gs.Status.Conditions, v1.ConditionReady) {
				failed++
			}
		}
		return failed == n, nil
	})
}

// TestDeadGitHostRetriesBounded: 500 GitSyncs on a Git host that accepts
// connections and closes them at once. Each GitSync's first reconcile asks
// the host once; every later ask is a retry, and retries take tokens from
// the global bucket, so from the agent's start to any moment T the host
// sees at most 500 + RetryBurst + RetryQPS × T connections, however the
// per-GitSync backoffs line up.
//
// Checked with RetryQPS 0 (no bucket): each GitSync retries after 1, 2,
// 4, 8 s…, and the host sees thousands of connections within the bound's
// window.
func TestDeadGitHostRetriesBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("500 GitSyncs")
	}
	c := setup(t)
	ns := env.Namespace(t)
	host := &gittest.DeadHost{}
	base := host.Start(t)
	l := controller.DefaultLimits()
	l.RetryQPS, l.RetryBurst = 2, 10
	start := time.Now()
	startAgent(t, agentOptions{namespace: ns, concurrent: 8, limits: &l})
	const n = 500
	createOnDeadHost(t, c, ns, base, n)
	bound := func() int { return n + l.RetryBurst + int(l.RetryQPS*time.Since(start).Seconds()) + 1 }
	// Watch retries arrive for a while: 20 beyond the first asks.
	host.WaitFor(t, "20 retries", func(accepted, _, _ int) bool { return accepted >= n+20 || accepted > bound() })
	accepted, _, _ := host.Counts()
	t.Logf("%d connections in %v (bound %d)", accepted, time.Since(start).Round(time.Second), bound())
	if accepted > bound() {
		t.Errorf("the dead host accepted %d connections in %v, want at most %d (%d first asks + burst %d + %.0f/s)",
			accepted, time.Since(start).Round(time.Second), bound(), n, l.RetryBurst, l.RetryQPS)
	}
}

// TestDeadGitHostConcurrency: GitSyncs on a host that accepts connections
// and never answers hold at most GitHostConcurrency of them open at once,
// whatever the number of workers; each is closed when its reconcile gives
// up (spec.timeout). Connections are counted where the agent dials and
// closes them (the host itself sees a close a moment later).
//
// Checked with GitHostConcurrency 0 (no limit): 8 workers hold 8.
func TestDeadGitHostConcurrency(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	host := &gittest.DeadHost{Hang: true}
	base := host.Start(t)
	l := controller.DefaultLimits()
	l.GitHostConcurrency = 2
	var mu sync.Mutex
	open, most := 0, 0
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		open++
		most = max(most, open)
		mu.Unlock()
		return &countedConn{Conn: conn, closed: func() { mu.Lock(); open--; mu.Unlock() }}, nil
	}
	startAgent(t, agentOptions{namespace: ns, concurrent: 8, limits: &l, dial: dial})
	ctx := context.Background()
	for i := range 40 {
		gs := newGitSync(ns, fmt.Sprint("app-", i), fmt.Sprintf("%s/repo-%d.git", base, i), func(g *v1.GitSync) {
			g.Spec.Timeout = &metav1.Duration{Duration: time.Second}
		})
		if err := c.Create(ctx, gs); err != nil {
			t.Fatal(err)
		}
	}
	host.WaitFor(t, "12 connections", func(accepted, _, _ int) bool { return accepted >= 12 })
	mu.Lock()
	defer mu.Unlock()
	if most > l.GitHostConcurrency {
		t.Errorf("the agent held %d connections to the hung host open at once, want at most %d", most, l.GitHostConcurrency)
	}
}

// countedConn calls closed once, at its first Close.
type countedConn struct {
	net.Conn
	once   sync.Once
	closed func()
}

func (c *countedConn) Close() error {
	c.once.Do(c.closed)
	return c.Conn.Close()
}
