package shard

import (
	"slices"
	"strings"
	"time"
)

// view is what a replica knows at one moment: who it is, which member list it
// published (acked) and which it will publish next once it has drained the
// keys that list takes away, and the published lists of the other unexpired
// replicas, read after its own publication. It never changes once built.
type view struct {
	self string
	// valid is false before the first publication and after a renewal
	// deadline was missed: the replica owns nothing.
	valid bool
	// acked is the member list in this replica's Lease; next is the live
	// members it sees now. They differ while keys are being handed off.
	acked, next []string
	// others maps each other unexpired replica to its published list.
	others map[string][]string
}

// mayRun reports whether the replica may start reconciling key.
func (v *view) mayRun(key string) bool {
	if v == nil || !v.valid || Owner(v.acked, key) != v.self || Owner(v.next, key) != v.self {
		return false
	}
	for m, list := range v.others {
		if Owner(list, key) == m {
			return false
		}
	}
	return true
}

// owns reports whether the replica is key's owner in the latest membership it
// saw, whether or not it may run it yet.
func (v *view) owns(key string) bool {
	return v != nil && v.valid && Owner(v.next, key) == v.self
}

// sameMembers reports whether a and b list the same members.
func sameMembers(a, b []string) bool { return slices.Equal(normalize(a), normalize(b)) }

// formatMembers and parseMembers are the published form of a member list.
func formatMembers(m []string) string { return strings.Join(normalize(m), ",") }

func parseMembers(s string) []string {
	if s == "" {
		return nil
	}
	return normalize(strings.Split(s, ","))
}

// liveness tracks when this replica last saw each Lease change, on its own
// clock, so a Lease is live for LeaseDuration after its holder's last renewal
// was observed here, whatever the holder's clock says.
type liveness struct {
	duration time.Duration
	seen     map[string]observed
}

type observed struct {
	version string    // the Lease's resourceVersion
	at      time.Time // when this replica first saw that version
}

func newLiveness(d time.Duration) *liveness {
	return &liveness{duration: d, seen: map[string]observed{}}
}

// observe records the Leases of one consistent list (name → resourceVersion)
// at now and returns the names still live. A Lease that left the list is
// forgotten: its holder deleted it after draining.
func (l *liveness) observe(now time.Time, versions map[string]string) []string {
	for name := range l.seen {
		if _, ok := versions[name]; !ok {
			delete(l.seen, name)
		}
	}
	var live []string
	for name, rv := range versions {
		o, ok := l.seen[name]
		if !ok || o.version != rv {
			o = observed{version: rv, at: now}
			l.seen[name] = o
		}
		if now.Sub(o.at) < l.duration {
			live = append(live, name)
		}
	}
	return normalize(live)
}

// expiredFor returns how long name's Lease has been expired, or 0.
func (l *liveness) expiredFor(now time.Time, name string) time.Duration {
	o, ok := l.seen[name]
	if !ok {
		return 0
	}
	return max(0, now.Sub(o.at)-l.duration)
}
