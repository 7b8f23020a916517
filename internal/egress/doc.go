// Package egress decides which addresses a URL named by a tenant may reach:
// a Git remote in spec.source.url, a server in a spec.kubeConfig kubeconfig.
//
// A Policy refuses loopback, link-local, unspecified and cloud metadata
// addresses (in their IPv4, IPv6 and IPv4-mapped IPv6 forms) unless the
// operator exempted a prefix covering them. A Dialer applies a Policy at
// connect time: it resolves the host, checks every address the name
// resolves to, and dials only an address it checked, so a name that
// resolves to a public address first and to a denied one later (DNS
// rebinding) never reaches the denied one, and neither does a redirect.
//
// The package never opens a connection itself: Dialer.Dial does, and tests
// replace it with a recorder.
package egress
