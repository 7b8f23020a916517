package remote

import (
	"context"
	"fmt"
	"net"
	"sync"

	"gitsync.dev/gitsync/internal/egress"
)

// LimitHosts returns the dialer the agent's Git traffic (ls-remotes and
// fetches, http(s) and ssh) leaves through: d, with at most n connections
// open to one address at once (n <= 0: no limit). A host that accepts
// connections and then hangs holds at most n of them, each until the
// request's timeout, and the agent's GitSyncs together never open more
// than n to one host however many workers ask. Callers waiting for a slot
// wait until their context ends.
func LimitHosts(d egress.Dialer, n int) *egress.Dialer {
	d.Dial = newHostLimit(n).dial(d.Dial)
	return &d
}

// hostLimit bounds the connections open to one address at once. A slot is
// taken before dialing and given back when the connection is closed (an
// idle keep-alive connection keeps its slot; the HTTP transport reuses it).
type hostLimit struct {
	n     int // <= 0: no limit
	mu    sync.Mutex
	hosts map[string]*hostSlots
}

// hostSlots is one address's semaphore and how many callers hold or wait
// for it, so an idle address's entry is dropped.
type hostSlots struct {
	sem   chan struct{}
	users int
}

func newHostLimit(n int) *hostLimit {
	return &hostLimit{n: n, hosts: map[string]*hostSlots{}}
}

// dial wraps next (nil: a net.Dialer) with the limit.
func (h *hostLimit) dial(next func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if next == nil {
		next = (&net.Dialer{}).DialContext
	}
	if h.n <= 0 {
		return next
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		release, err := h.acquire(ctx, addr)
		if err != nil {
			return nil, err
		}
		conn, err := next(ctx, network, addr)
		if err != nil {
			release()
			return nil, err
		}
		return &slotConn{Conn: conn, release: release}, nil
	}
}

// slotConn gives its slot back once it is closed.
type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// acquire waits for a slot of addr and returns its release; it fails only
// when ctx ends first.
func (h *hostLimit) acquire(ctx context.Context, addr string) (func(), error) {
	h.mu.Lock()
	s, ok := h.hosts[addr]
	if !ok {
		s = &hostSlots{sem: make(chan struct{}, h.n)}
		h.hosts[addr] = s
	}
	s.users++
	h.mu.Unlock()
	leave := func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if s.users--; s.users == 0 {
			delete(h.hosts, addr)
		}
	}
	select {
	case s.sem <- struct{}{}:
		return func() { <-s.sem; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, fmt.Errorf("waiting for a connection slot to %s: %w", addr, ctx.Err())
	}
}
