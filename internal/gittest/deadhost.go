package gittest

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// DeadHost is a Git host that is down in one of two ways: it accepts
// connections and closes them at once (Hang false), or accepts them and
// never answers until the client hangs up (Hang true). It counts the
// connections accepted, those open now, and the most open at once.
type DeadHost struct {
	Hang bool

	mu                       sync.Mutex
	accepted, open, mostOpen int
}

// Start listens on loopback until the test ends and returns the host's
// base URL, http://127.0.0.1:PORT.
func (h *DeadHost) Start(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.accepted++
			h.open++
			h.mostOpen = max(h.mostOpen, h.open)
			h.mu.Unlock()
			go h.serve(c)
		}
	}()
	return "http://" + ln.Addr().String()
}

func (h *DeadHost) serve(c net.Conn) {
	if h.Hang {
		_, _ = io.Copy(io.Discard, c) // until the client closes
	}
	_ = c.Close()
	h.mu.Lock()
	h.open--
	h.mu.Unlock()
}

// Counts returns the connections accepted so far, open now, and the most
// open at once.
func (h *DeadHost) Counts() (accepted, open, mostOpen int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.accepted, h.open, h.mostOpen
}

// Reset starts the counts again, keeping what is open now.
func (h *DeadHost) Reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.accepted, h.mostOpen = 0, h.open
}

// WaitFor polls the counts until cond holds, failing the test after a
// minute.
func (h *DeadHost) WaitFor(t testing.TB, what string, cond func(accepted, open, mostOpen int) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return cond(h.Counts()), nil
	})
	if err != nil {
		a, o, m := h.Counts()
		t.Fatalf("dead host: %s: %v (accepted %d, open %d, most open %d)", what, err, a, o, m)
	}
}
