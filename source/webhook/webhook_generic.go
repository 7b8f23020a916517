package webhook

import (
	"net/http"
	"strconv"
	"time"

	"k8s.io/utils/clock"
)

// genericProvider is the receiver for CI systems and scripts: a JSON body
// {"repository": "<url>", "branch": "main"} (or "ref": "refs/heads/main"),
// an X-Timestamp header with Unix seconds, and X-Signature
// "sha256=" + hex HMAC-SHA256 over "<timestamp>.<body>". The timestamp is
// inside the signed message so it cannot be replaced, and a request whose
// timestamp is outside the window is refused as a replay.
type genericProvider struct {
	clock  clock.PassiveClock
	window time.Duration
}

var _ webhookProvider = genericProvider{}

func (genericProvider) Classify(http.Header) eventKind { return eventPush }

// Delivery is keyed by what the signature covers: the timestamp and body.
func (genericProvider) Delivery(h http.Header, body []byte) []string {
	return deliveryKeys("", genericSignedMessage(h.Get("X-Timestamp"), body))
}

func (g genericProvider) Verify(h http.Header, body, secret []byte) bool {
	ts := h.Get("X-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	// Compare in seconds so absurd timestamps cannot overflow a Duration.
	now := g.clock.Now().Unix()
	if skew := now - sec; skew > int64(g.window/time.Second) || -skew > int64(g.window/time.Second) {
		return false
	}
	return verifyHexHMAC(h.Get("X-Signature"), "sha256=", genericSignedMessage(ts, body), secret)
}

// genericSignedMessage is what the generic receiver's signature covers.
func genericSignedMessage(timestamp string, body []byte) []byte {
	msg := make([]byte, 0, len(timestamp)+1+len(body))
	msg = append(msg, timestamp...)
	msg = append(msg, '.')
	return append(msg, body...)
}

// genericPush is the generic receiver's payload.
type genericPush struct {
	Repository string `json:"repository"`
	Branch     string `json:"branch"`
	Ref        string `json:"ref"`
}

func (genericProvider) Parse(body []byte) (pushEvent, error) {
	var p genericPush
	if err := decodePayload(body, &p); err != nil {
		return pushEvent{}, err
	}
	if p.Repository == "" {
		return pushEvent{}, errMalformed
	}
	ev := pushEvent{RepoURLs: []string{p.Repository}}
	switch {
	case p.Ref != "":
		ev.Refs = []string{p.Ref}
	case p.Branch != "":
		ev.Refs = []string{"refs/heads/" + p.Branch}
	}
	return ev, nil
}
