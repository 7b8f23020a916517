package remote

import (
	"context"
	"net"
	"testing"
)

// TestHostLimit: at most n connections to one address at once; another
// address is not held back by it; a caller that gives up waiting gets an
// error and takes no slot; a closed connection gives its slot back.
//
// Checked by making acquire return at once: the third dial succeeds.
func TestHostLimit(t *testing.T) {
	h := newHostLimit(2)
	dial := h.dial(func(context.Context, string, string) (net.Conn, error) {
		c, _ := net.Pipe()
		return c, nil
	})
	ctx := context.Background()
	c1, err1 := dial(ctx, "tcp", "10.0.0.1:443")
	c2, err2 := dial(ctx, "tcp", "10.0.0.1:443")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := dial(gone, "tcp", "10.0.0.1:443"); err == nil {
		t.Fatal("a third connection to an address with 2 open was dialed")
	}
	c3, err := dial(ctx, "tcp", "10.0.0.1:22") // another port
	if err != nil {
		t.Fatalf("another address was held back: %v", err)
	}
	c3.Close()
	c1.Close()
	c1.Close() // a second Close gives nothing back twice
	c4, err := dial(ctx, "tcp", "10.0.0.1:443")
	if err != nil {
		t.Fatalf("a closed connection's slot was not reusable: %v", err)
	}
	if _, err := dial(gone, "tcp", "10.0.0.1:443"); err == nil {
		t.Fatal("a double Close freed two slots")
	}
	c4.Close()
	c2.Close()
	if len(h.hosts) != 0 {
		t.Errorf("idle addresses kept: %v", h.hosts)
	}
}
