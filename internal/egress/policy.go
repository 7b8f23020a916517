package egress

import (
	"fmt"
	"net/netip"
	"strings"
)

// Policy says which addresses a tenant-named URL may reach. The zero value
// is the safe default: every address except the denied ranges below.
type Policy struct {
	// Allow exempts these prefixes from the deny list. It is the operator's
	// opt-in (gitsync run --allow-networks), for Git servers or clusters
	// that really live on loopback, as in tests and demos.
	Allow []netip.Prefix
}

// denied lists the ranges a tenant-named URL must never reach, with why.
// Cloud metadata endpoints come first so the most specific reason wins.
var denied = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("169.254.169.254/32"), "a cloud metadata address"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "a cloud metadata address"},
	{netip.MustParsePrefix("100.100.100.200/32"), "a cloud metadata address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified address"},
	{netip.MustParsePrefix("::/128"), "an unspecified address"},
}

// Check returns a *DeniedError when addr is in a denied range that no
// allowed prefix covers. IPv4-mapped IPv6 addresses (::ffff:127.0.0.1) are
// judged as the IPv4 address they carry, and so is an allowed prefix.
func (p Policy) Check(addr netip.Addr) error {
	addr = addr.Unmap().WithZone("")
	why := ""
	for _, d := range denied {
		if d.prefix.Contains(addr) {
			why = d.why
			break
		}
	}
	if why == "" {
		return nil
	}
	for _, a := range p.Allow {
		if unmapPrefix(a).Contains(addr) {
			return nil
		}
	}
	return &DeniedError{Addr: addr, Why: why}
}

func unmapPrefix(p netip.Prefix) netip.Prefix {
	if !p.Addr().Is4In6() {
		return p
	}
	bits := p.Bits() - 96
	if bits < 0 {
		bits = 0
	}
	return netip.PrefixFrom(p.Addr().Unmap(), bits).Masked()
}

// DeniedError is a refused address. Retrying cannot help: only the
// operator's --allow-networks or a different URL can.
type DeniedError struct {
	// Host is the name the URL gave, when it was a name; empty for an IP.
	Host string
	// Addr is the refused address (Host resolved to it).
	Addr netip.Addr
	// Why names the range: "a loopback address", "a cloud metadata address".
	Why string
}

func (e *DeniedError) Error() string {
	subject := e.Addr.String()
	if e.Host != "" && e.Host != subject {
		subject = fmt.Sprintf("%s (resolves to %s)", e.Host, e.Addr)
	}
	return fmt.Sprintf("%s is %s, refused for tenant-named URLs unless gitsync run is started with --allow-networks %s",
		subject, e.Why, netip.PrefixFrom(e.Addr, e.Addr.BitLen()))
}

// ParsePrefixes parses a comma-separated list of CIDRs or single addresses
// ("127.0.0.0/8,::1"), the value of --allow-networks.
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("network %q invalid: want a CIDR such as 10.0.0.0/8 or an address", f)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("network %q invalid: want a CIDR such as 10.0.0.0/8 or an address", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
