package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPolicyCheck covers every denied range, the IPv4-mapped forms, and
// operator prefixes that exempt them. Checked by emptying the denied table
// (every "denied" case fails) and by dropping Unmap in Check (the mapped
// cases fail).
func TestPolicyCheck(t *testing.T) {
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	tests := []struct {
		name   string
		addr   string
		allow  []netip.Prefix
		denied string // Why, or "" when allowed
	}{
		{name: "public IPv4", addr: "93.184.216.34"},
		{name: "public IPv6", addr: "2606:2800:220:1::1"},
		{name: "private range is not denied", addr: "10.1.2.3"},
		{name: "loopback", addr: "127.0.0.1", denied: "a loopback address"},
		{name: "loopback elsewhere in 127/8", addr: "127.45.6.7", denied: "a loopback address"},
		{name: "IPv6 loopback", addr: "::1", denied: "a loopback address"},
		{name: "mapped loopback", addr: "::ffff:127.0.0.1", denied: "a loopback address"},
		{name: "link-local", addr: "169.254.1.1", denied: "a link-local address"},
		{name: "IPv6 link-local", addr: "fe80::1", denied: "a link-local address"},
		{name: "IPv6 link-local with zone", addr: "fe80::1%eth0", denied: "a link-local address"},
		{name: "unspecified", addr: "0.0.0.0", denied: "an unspecified address"},
		{name: "in 0.0.0.0/8", addr: "0.1.2.3", denied: "an unspecified address"},
		{name: "IPv6 unspecified", addr: "::", denied: "an unspecified address"},
		{name: "metadata", addr: "169.254.169.254", denied: "a cloud metadata address"},
		{name: "mapped metadata", addr: "::ffff:169.254.169.254", denied: "a cloud metadata address"},
		{name: "AWS IPv6 metadata", addr: "fd00:ec2::254", denied: "a cloud metadata address"},
		{name: "Alibaba metadata", addr: "100.100.100.200", denied: "a cloud metadata address"},
		{name: "allowed loopback", addr: "127.0.0.1", allow: loopback},
		{name: "allowed covers mapped form", addr: "::ffff:127.0.0.1", allow: loopback},
		{name: "mapped allowed prefix", addr: "127.0.0.1", allow: []netip.Prefix{netip.MustParsePrefix("::ffff:127.0.0.0/104")}},
		{name: "allowing loopback leaves metadata denied", addr: "169.254.169.254", allow: loopback, denied: "a cloud metadata address"},
		{name: "allowed metadata", addr: "169.254.169.254", allow: []netip.Prefix{netip.MustParsePrefix("169.254.169.254/32")}},
		{name: "IPv4 allow does not cover IPv6 loopback", addr: "::1", allow: loopback, denied: "a loopback address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Policy{Allow: tc.allow}.Check(netip.MustParseAddr(tc.addr))
			got := ""
			var de *DeniedError
			if errors.As(err, &de) {
				got = de.Why
			} else if err != nil {
				t.Fatalf("Check = %v, want a *DeniedError or nil", err)
			}
			if diff := cmp.Diff(tc.denied, got); diff != "" {
				t.Errorf("Check(%s) (-want +got):\n%s", tc.addr, diff)
			}
		})
	}
}

func TestParsePrefixes(t *testing.T) {
	got, err := ParsePrefixes(" 127.0.0.0/8, ::1 ,10.1.2.3/8,")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.0/8", "::1/128", "10.0.0.0/8"}
	var gotS []string
	for _, p := range got {
		gotS = append(gotS, p.String())
	}
	if diff := cmp.Diff(want, gotS); diff != "" {
		t.Errorf("ParsePrefixes (-want +got):\n%s", diff)
	}
	if _, err := ParsePrefixes("localhost"); err == nil {
		t.Error("ParsePrefixes(localhost) = nil error, want a refusal")
	}
}

// recorder stands in for the network: it records every address it is asked
// to dial and never opens a connection.
type recorder struct {
	mu    sync.Mutex
	addrs []string
}

var errRecorded = errors.New("recorder: no connection opened")

func (r *recorder) dial(_ context.Context, _, addr string) (net.Conn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addrs = append(r.addrs, addr)
	return nil, errRecorded
}

// table resolves names from a map, so no lookup leaves the machine.
type table map[string][]string

func (t table) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, s := range t[host] {
		out = append(out, netip.MustParseAddr(s))
	}
	if out == nil {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

// TestDialContext: a denied host never reaches the dial function, an allowed
// one reaches it only as the checked IP, and a name with one denied address
// among public ones is refused whole. Checked by making DialContext skip
// Resolve's checks (the denied cases then record dials and fail).
func TestDialContext(t *testing.T) {
	names := table{
		"git.example.test":      {"93.184.216.34"},
		"rebind.example.test":   {"93.184.216.34", "127.0.0.1"},
		"metadata.example.test": {"169.254.169.254"},
		"v6.example.test":       {"::1"},
	}
	tests := []struct {
		name   string
		addr   string
		allow  []netip.Prefix
		dialed []string
		denied bool
	}{
		{name: "public name dials its checked IP", addr: "git.example.test:443", dialed: []string{"93.184.216.34:443"}},
		{name: "public IP literal", addr: "93.184.216.34:22", dialed: []string{"93.184.216.34:22"}},
		{name: "metadata IP literal", addr: "169.254.169.254:80", denied: true},
		{name: "metadata name", addr: "metadata.example.test:80", denied: true},
		{name: "loopback literal", addr: "127.0.0.1:8080", denied: true},
		{name: "IPv6 loopback name", addr: "v6.example.test:443", denied: true},
		{name: "mapped loopback literal", addr: "[::ffff:127.0.0.1]:443", denied: true},
		{name: "one denied address refuses the name", addr: "rebind.example.test:443", denied: true},
		{name: "allowed loopback", addr: "127.0.0.1:8080", allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, dialed: []string{"127.0.0.1:8080"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			d := &Dialer{Policy: Policy{Allow: tc.allow}, Resolver: names, Dial: rec.dial}
			_, err := d.DialContext(context.Background(), "tcp", tc.addr)
			var de *DeniedError
			if got := errors.As(err, &de); got != tc.denied {
				t.Errorf("DialContext(%s) = %v, denied = %t, want %t", tc.addr, err, got, tc.denied)
			}
			if diff := cmp.Diff(tc.dialed, rec.addrs); diff != "" {
				t.Errorf("addresses dialed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeniedErrorNamesHostAndFlag(t *testing.T) {
	d := &Dialer{Resolver: table{"meta.test": {"169.254.169.254"}}, Dial: (&recorder{}).dial}
	_, err := d.DialContext(context.Background(), "tcp", "meta.test:80")
	want := "meta.test (resolves to 169.254.169.254) is a cloud metadata address, refused for tenant-named URLs unless gitsync run is started with --allow-networks 169.254.169.254/32"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant %s", err, want)
	}
}
