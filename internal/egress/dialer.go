package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// Resolver looks up the addresses of a host name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer opens connections for tenant-named URLs, only to addresses its
// Policy allows. The zero value applies the safe default Policy with the
// system resolver and a plain net.Dialer.
type Dialer struct {
	// Policy decides which addresses may be dialed.
	Policy Policy
	// Resolver resolves host names; nil means net.DefaultResolver. Tests
	// use a table, so no lookup leaves the machine.
	Resolver Resolver
	// Dial opens the connection to an address already checked (an IP
	// literal with port); nil means a net.Dialer. Tests replace it with a
	// recorder that never opens a connection off this machine.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// DialContext resolves addr's host, checks every address it resolves to
// against the Policy, and dials the checked addresses in order until one
// answers. One denied address refuses the whole name: a name that mixes a
// public and a loopback address is an attack on the check, not a fallback.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	ips, err := d.Resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	dial := d.Dial
	if dial == nil {
		var nd net.Dialer
		dial = nd.DialContext
	}
	var errs []error
	for _, ip := range ips {
		conn, err := dial(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// Resolve returns the addresses of host (an IP literal or a name) after
// checking each of them; it is what DialContext dials, and lets a caller
// refuse a URL before it builds anything on it.
func (d *Dialer) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := d.Policy.Check(ip); err != nil {
			return nil, err
		}
		return []netip.Addr{ip}, nil
	}
	r := d.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ips, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", host)
	}
	for _, ip := range ips {
		if err := d.Policy.Check(ip); err != nil {
			var de *DeniedError
			if errors.As(err, &de) {
				de.Host = host
			}
			return nil, err
		}
	}
	return ips, nil
}
