package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"gitsync.dev/gitsync/source/git"
)

// hostLimit bounds the requests open to one Git host at once. A slot is
// held for the whole request, so a host that accepts connections and then
// hangs holds at most n of them, each until the Fetcher's timeout.
type hostLimit struct {
	n     int // <= 0: no limit
	mu    sync.Mutex
	hosts map[string]*hostSlots
}

// hostSlots is one host's semaphore and how many callers hold or wait for
// it, so an idle host's entry is dropped.
type hostSlots struct {
	sem   chan struct{}
	users int
}

func newHostLimit(n int) *hostLimit {
	return &hostLimit{n: n, hosts: map[string]*hostSlots{}}
}

// acquire waits for a slot of rawURL's host and returns its release; it
// fails only when ctx ends first.
func (h *hostLimit) acquire(ctx context.Context, rawURL string) (func(), error) {
	if h.n <= 0 {
		return func() {}, nil
	}
	host := hostOf(rawURL)
	h.mu.Lock()
	s, ok := h.hosts[host]
	if !ok {
		s = &hostSlots{sem: make(chan struct{}, h.n)}
		h.hosts[host] = s
	}
	s.users++
	h.mu.Unlock()
	leave := func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if s.users--; s.users == 0 {
			delete(h.hosts, host)
		}
	}
	select {
	case s.sem <- struct{}{}:
		return func() { <-s.sem; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, fmt.Errorf("waiting for a connection slot to %s: %w", git.RedactURL(host), ctx.Err())
	}
}

// hostOf names the host a Git URL connects to: scheme, host and port
// (scp-style URLs are ssh). A URL that does not parse is its own host.
func hostOf(rawURL string) string {
	ep, err := transport.NewEndpoint(rawURL)
	if err != nil {
		return rawURL
	}
	if ep.Protocol == "file" {
		return "file://" + ep.Path // each local repository is its own "host"
	}
	return fmt.Sprintf("%s://%s:%d", ep.Protocol, strings.ToLower(ep.Host), ep.Port)
}
