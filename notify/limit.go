package notify

import "time"

// Limit is a token bucket: Burst sends at once, then one per Every.
type Limit struct {
	// Burst is how many sends may go out back to back; at least 1.
	Burst int
	// Every is how long one more send takes to be allowed again.
	Every time.Duration
}

// DefaultLimit lets a few transitions through at once (a failure, its
// recovery and the next revision), then one per five minutes: a GitSync
// that flaps tells its channel so, without flooding it.
var DefaultLimit = Limit{Burst: 3, Every: 5 * time.Minute}

// bucket is one (GitSync, destination)'s tokens.
type bucket struct {
	limit  Limit
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

func newBucket(l Limit, now time.Time) *bucket {
	return &bucket{limit: l, tokens: float64(l.Burst), at: now}
}

// take spends a token at now and returns 0, or returns how long until a
// token is there (spending nothing).
func (b *bucket) take(now time.Time) time.Duration {
	if b.limit.Every > 0 && now.After(b.at) {
		b.tokens += float64(now.Sub(b.at)) / float64(b.limit.Every)
	}
	b.tokens = min(b.tokens, float64(b.limit.Burst))
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(b.limit.Every))
}
