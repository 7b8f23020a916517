package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// State is the transition an Event tells of.
type State string

const (
	// Ready: the GitSync became Ready, or applied a new revision while Ready.
	Ready State = "Ready"
	// Failed: the GitSync failed, or failed for another reason.
	Failed State = "Failed"
	// Recovered: the GitSync became Ready after a failure.
	Recovered State = "Recovered"
)

// Event is one transition of one GitSync. Message and Reason are the Ready
// condition's, already masked by the sync's redactor.
type Event struct {
	Namespace, Name string
	// Revision is the applied revision (Ready, Recovered) or the attempted
	// one (Failed), in Revision.String() form; empty when none resolved.
	Revision string
	State    State
	Reason   string
	Message  string
	Time     time.Time
	// Changes are what the sync did to the cluster's objects, at most
	// MaxChanges of them, masked like Message; MoreChanges counts those
	// left out. Only the pull/merge request comment shows them.
	Changes     []Change
	MoreChanges int
}

// Change is one object a sync changed.
type Change struct {
	// Action is created, configured, pruned or orphaned.
	Action string
	// Subject is the object, "Kind/namespace/name".
	Subject string
}

// MaxChanges bounds the changes an Event carries.
const MaxChanges = 200

// Providers are the accepted Target.Provider values.
var Providers = []string{"webhook", "slack", "teams", "discord"}

// CommentProviders are the spec.notifications providers that comment on
// the pull or merge requests holding the revision's commit (through
// commitstatus.Commenter, with CommentBody) instead of posting to an
// address.
var CommentProviders = []string{"github", "gitlab"}

// SignatureHeader carries a webhook body's HMAC-SHA256, "sha256=<hex>".
const SignatureHeader = "X-Gitsync-Signature"

// Target is where one Event is sent, read from the tenant's Secret.
type Target struct {
	Provider string
	// URL is the Secret's address: the webhook or incoming-webhook URL.
	URL string
	// Key signs a webhook body; required for provider webhook.
	Key []byte
}

// SendError is an Event the destination did not accept, or could not be
// asked.
type SendError struct {
	Provider string
	// Code is the HTTP status code of the answer; 0 when there was none.
	Code int
	// Message is the transport's cause, without the address or key.
	Message string
}

func (e *SendError) Error() string {
	what := e.Provider + " notification failed"
	if e.Code != 0 {
		what += fmt.Sprintf(": HTTP %d", e.Code)
	}
	if e.Message != "" {
		what += ": " + e.Message
	}
	return what
}

// Sign returns the SignatureHeader value of body under key.
func Sign(key, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Send posts e to t with c, one request bounded by ctx and c's timeout.
func Send(ctx context.Context, c *http.Client, t Target, e Event) error {
	fail := func(code int, msg string) error {
		return &SendError{Provider: t.Provider, Code: code, Message: t.redact(msg)}
	}
	if c == nil {
		return fail(0, "no HTTP client")
	}
	if err := t.check(); err != nil {
		return fail(0, err.Error())
	}
	body, err := Body(t.Provider, e)
	if err != nil {
		return fail(0, err.Error())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return fail(0, "the Secret's address is not a URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "gitsync")
	if t.Provider == "webhook" {
		req.Header.Set(SignatureHeader, Sign(t.Key, body))
	}
	resp, err := c.Do(req)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err // its URL is the credential
		}
		return fail(0, err.Error())
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 16<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fail(resp.StatusCode, "")
	}
	return nil
}

// check refuses a Target Send cannot use, without quoting its address.
func (t Target) check() error {
	known := false
	for _, p := range Providers {
		known = known || p == t.Provider
	}
	if !known {
		return fmt.Errorf("provider %q unknown (want one of %s)", t.Provider, strings.Join(Providers, ", "))
	}
	u, err := url.Parse(t.URL)
	if t.URL == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return errors.New("the Secret's address key is not an http(s) URL")
	}
	if t.Provider == "webhook" && len(t.Key) == 0 {
		return errors.New("the Secret has no token key to sign the webhook body with")
	}
	return nil
}

// redact cuts the address, its path and the key out of s.
func (t Target) redact(s string) string {
	secrets := []string{t.URL, string(t.Key)}
	if u, err := url.Parse(t.URL); err == nil && len(u.Path) > 1 {
		secrets = append(secrets, u.Path, strings.TrimPrefix(u.Path, "/"))
	}
	for _, v := range secrets {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}
