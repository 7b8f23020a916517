package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// Target is one source a webhook may wake: what to enqueue, which
// branch it follows and the secret its webhook is signed with.
type Target struct {
	// Key is passed to Enqueue, e.g. "namespace/name" of a GitSync.
	Key string
	// Branch the source follows ("main" or "refs/heads/main"); empty matches
	// every push to the repository, which is right for sources that follow a
	// tag, a semver range or a commit.
	Branch string
	// Secret is the webhook secret (HMAC key or GitLab token). A target with
	// an empty secret is never triggered: an HMAC with an empty key is
	// something anyone can compute.
	Secret []byte
}

// eventKind is what a request's headers say it is.
type eventKind int

const (
	eventOther     eventKind = iota // an event we do not act on; answered 202
	eventPush                       // a push: parse, verify, enqueue
	eventPing                       // a hook test; answered 200, nothing else
	eventMalformed                  // required headers missing; answered 400
)

// pushEvent is a push payload reduced to what matching needs.
type pushEvent struct {
	// RepoURLs are every spelling of the repository in the payload (clone,
	// ssh, web), not yet normalised.
	RepoURLs []string
	// Refs are the full refs pushed ("refs/heads/main", "refs/tags/v1"). An
	// empty list means "something in the repository changed".
	Refs []string
}

// webhookProvider is one Git host's webhook dialect. Implementations only
// read the request; they never act on it.
type webhookProvider interface {
	// Classify tells a push from a ping from an event we ignore, by headers.
	Classify(h http.Header) eventKind
	// Delivery returns the keys that identify this delivery for replay
	// detection (see deliveryKeys).
	Delivery(h http.Header, body []byte) []string
	// Verify checks the signature or token against one candidate secret, in
	// constant time.
	Verify(h http.Header, body, secret []byte) bool
	// Parse extracts the repository URLs and refs from a push payload.
	Parse(body []byte) (pushEvent, error)
}

// errMalformed is returned by parsers for a payload that is not the JSON they expect.
var errMalformed = errors.New("webhook payload malformed")

// decodePayload unmarshals a JSON payload into v, failing with errMalformed.
func decodePayload(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return errMalformed
	}
	return nil
}

// verifyHexHMAC checks header == prefix + hex(HMAC-SHA256(secret, msg)) in
// constant time. The hex may be in either case.
func verifyHexHMAC(header, prefix string, msg, secret []byte) bool {
	if len(secret) == 0 || !strings.HasPrefix(header, prefix) {
		return false
	}
	got, err := hex.DecodeString(strings.TrimSpace(header[len(prefix):]))
	if err != nil || len(got) != sha256.Size {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(msg)
	return hmac.Equal(got, mac.Sum(nil))
}

// signHexHMAC returns prefix + hex(HMAC-SHA256(secret, msg)), the header value
// verifyHexHMAC accepts.
func signHexHMAC(prefix string, msg, secret []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(msg)
	return prefix + hex.EncodeToString(mac.Sum(nil))
}

// equalToken compares a shared token in constant time, including its length
// (both sides are hashed first).
func equalToken(got string, secret []byte) bool {
	if len(secret) == 0 || got == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256(secret)
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// nonEmpty returns the non-empty strings among ss.
func nonEmpty(ss ...string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// branchMatches reports whether a target following branch wants an event
// with these refs.
func branchMatches(branch string, refs []string) bool {
	if branch == "" || len(refs) == 0 {
		return true
	}
	want := "refs/heads/" + strings.TrimPrefix(branch, "refs/heads/")
	for _, r := range refs {
		if r == want {
			return true
		}
	}
	return false
}
