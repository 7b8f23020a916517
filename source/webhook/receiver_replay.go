package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
)

// Result is what became of one webhook delivery, for the operator's
// metrics; the sender is never told.
type Result string

const (
	// ResultAccepted: verified and new; matching sources were enqueued.
	ResultAccepted Result = "accepted"
	// ResultBadSignature: the repository is followed, but no source's secret
	// verifies the signature or token (or it is missing, or the generic
	// hook's timestamp is outside the window).
	ResultBadSignature Result = "bad_signature"
	// ResultUnknownRepository: no source with a webhook secret follows the
	// payload's repository.
	ResultUnknownRepository Result = "unknown_repository"
	// ResultMalformed: a wrong method, missing headers or an unreadable payload.
	ResultMalformed Result = "malformed"
	// ResultReplayed: verified, but the same delivery was accepted before
	// within Options.ReplayTTL; nothing was enqueued.
	ResultReplayed Result = "replayed"
	// ResultTooLarge: the body is over Options.MaxBodyBytes.
	ResultTooLarge Result = "too_large"
	// ResultIgnored: a ping or an event other than a push.
	ResultIgnored Result = "ignored"
)

// Delivery is what the receiver tells Options.Observe about
// one request. It holds no payload, signature or secret.
type Delivery struct {
	// Provider is the hook's name: github, gitlab, bitbucket,
	// bitbucket-server, gitea or generic.
	Provider string
	Result   Result
	// Code is the HTTP status the sender was answered.
	Code int
	// Rejected are the keys of the sources that follow the payload's
	// repository but whose secret did not verify it (ResultBadSignature
	// only): likely a misconfigured secret the owner should hear about.
	Rejected []string
}

// deliveryKeys identify one delivery for replay detection: the host's
// delivery ID header when it sent one, and a digest of what the signature
// covers. The ID alone is not enough, since hosts do not sign it: a replay
// with a fresh ID still carries the same signed content. Neither key names
// the provider, so a delivery posted to several endpoints counts once.
func deliveryKeys(id string, signed []byte) []string {
	sum := sha256.Sum256(signed)
	keys := []string{"content:" + hex.EncodeToString(sum[:])}
	if id != "" {
		keys = append(keys, "id:"+id)
	}
	return keys
}

// replayMemory remembers the deliveries accepted recently, bounded in count
// (least recently seen forgotten first) and in age.
type replayMemory struct {
	ttl   time.Duration
	clock clock.PassiveClock
	mu    sync.Mutex
	seen  *lru.Cache // key → time.Time accepted
}

func newReplayMemory(size int, ttl time.Duration, clk clock.PassiveClock) *replayMemory {
	return &replayMemory{ttl: ttl, clock: clk, seen: lru.New(size)}
}

// firstTime reports whether none of keys (within scope) was accepted within
// the TTL, and remembers them all from now on.
func (m *replayMemory) firstTime(scope string, keys []string) bool {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	first := true
	for _, k := range keys {
		if at, ok := m.seen.Get(scope + "\x01" + k); ok && now.Sub(at.(time.Time)) < m.ttl {
			first = false
		}
	}
	if first {
		for _, k := range keys {
			m.seen.Add(scope+"\x01"+k, now)
		}
	}
	return first
}
