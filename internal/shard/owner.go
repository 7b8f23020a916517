package shard

import (
	"hash/fnv"
	"slices"
)

// Owner returns the member that owns key among members by rendezvous
// (highest random weight) hashing, or "" when members is empty. Adding a
// member moves to it only the keys it now scores highest on; removing one
// moves only its keys. The result depends on the set, not on its order.
func Owner(members []string, key string) string {
	best, bestScore := "", uint64(0)
	for _, m := range members {
		s := score(m, key)
		if best == "" || s > bestScore || (s == bestScore && m > best) {
			best, bestScore = m, s
		}
	}
	return best
}

// score is a 64-bit hash of (member, key), mixed so that members with
// similar names still spread keys evenly.
func score(member, key string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(member))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(key))
	x := h.Sum64()
	// splitmix64's finalizer
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// normalize sorts members and drops duplicates and empty names.
func normalize(members []string) []string {
	out := slices.Clone(members)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > 0 && out[0] == "" {
		out = out[1:]
	}
	return out
}
