package notify_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/notify"
)

// received is one request a stand-in got.
type received struct {
	path, signature, contentType string
	body                         []byte
}

// standIn is a receiver on loopback that hands each request to got and
// answers code.
func standIn(t *testing.T, code int) (*httptest.Server, chan received) {
	t.Helper()
	got := make(chan received, 8)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- received{path: r.URL.Path, signature: r.Header.Get(notify.SignatureHeader), contentType: r.Header.Get("Content-Type"), body: body}
		w.WriteHeader(code)
	}))
	t.Cleanup(s.Close)
	return s, got
}

func next(t *testing.T, got chan received) received {
	t.Helper()
	select {
	case r := <-got:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("no request arrived")
	}
	return received{}
}

var failed = notify.Event{Namespace: "prod", Name: "app", Revision: "main@sha1:0123456789abcdef0123456789abcdef01234567",
	State: notify.Failed, Reason: "ApplyFailed", Message: `ConfigMap/prod/Bad_Name apply failed: "Bad_Name" is invalid`,
	Time: time.Date(2026, 12, 4, 3, 4, 5, 0, time.UTC)}

// TestSendBodies: each provider gets the JSON its receivers read, naming
// the GitSync, its revision, state, reason and message; the webhook body
// carries an HMAC-SHA256 of the exact bytes sent, under the Secret's key.
func TestSendBodies(t *testing.T) {
	key := []byte("webhook-signing-key")
	for _, tc := range []struct {
		provider string
		// want picks what the provider's receiver shows out of the body.
		want func(t *testing.T, body map[string]any)
	}{
		{"webhook", func(t *testing.T, b map[string]any) {
			want := map[string]any{"gitsync": map[string]any{"namespace": "prod", "name": "app"}, "revision": failed.Revision,
				"state": "Failed", "reason": "ApplyFailed", "message": failed.Message, "time": "2026-12-04T03:04:05Z"}
			if d := cmp.Diff(want, b); d != "" {
				t.Errorf("webhook body (-want +got):\n%s", d)
			}
		}},
		{"slack", func(t *testing.T, b map[string]any) {
			att := b["attachments"].([]any)[0].(map[string]any)
			if b["text"] != "GitSync prod/app failed: ApplyFailed" || att["text"] != failed.Message || att["color"] != "#D73A49" {
				t.Errorf("slack body %v", b)
			}
		}},
		{"teams", func(t *testing.T, b map[string]any) {
			att := b["attachments"].([]any)[0].(map[string]any)
			card, _ := att["content"].(map[string]any)
			body, _ := card["body"].([]any)
			if b["type"] != "message" || att["contentType"] != "application/vnd.microsoft.card.adaptive" || card["type"] != "AdaptiveCard" || len(body) != 3 {
				t.Fatalf("teams body %v, want a message with one Adaptive Card", b)
			}
			title, text, facts := body[0].(map[string]any), body[1].(map[string]any), body[2].(map[string]any)
			if title["text"] != "GitSync prod/app failed: ApplyFailed" || title["color"] != "Attention" || text["text"] != failed.Message ||
				facts["type"] != "FactSet" || !strings.Contains(mustJSON(t, facts["facts"]), failed.Revision) {
				t.Errorf("teams card %v", card)
			}
		}},
		{"discord", func(t *testing.T, b map[string]any) {
			embed := b["embeds"].([]any)[0].(map[string]any)
			if b["content"] != "GitSync prod/app failed: ApplyFailed" || embed["description"] != failed.Message ||
				!strings.Contains(mustJSON(t, embed["fields"]), failed.Revision) {
				t.Errorf("discord body %v", b)
			}
		}},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			s, got := standIn(t, http.StatusNoContent)
			target := notify.Target{Provider: tc.provider, URL: s.URL + "/hooks/abc", Key: key}
			if err := notify.Send(context.Background(), s.Client(), target, failed); err != nil {
				t.Fatal(err)
			}
			r := next(t, got)
			if r.path != "/hooks/abc" || r.contentType != "application/json" {
				t.Errorf("request to %s as %s", r.path, r.contentType)
			}
			var body map[string]any
			if err := json.Unmarshal(r.body, &body); err != nil {
				t.Fatalf("body %s: %v", r.body, err)
			}
			tc.want(t, body)
			m := hmac.New(sha256.New, key)
			m.Write(r.body)
			wantSig := "sha256=" + hex.EncodeToString(m.Sum(nil))
			switch {
			case tc.provider == "webhook" && r.signature != wantSig:
				t.Errorf("signature %q, want %q", r.signature, wantSig)
			case tc.provider != "webhook" && r.signature != "":
				t.Errorf("%s request signed %q; only webhooks are", tc.provider, r.signature)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSendErrorsKeepTheSecret: a refused, unreachable or unusable
// destination is an error that never quotes the address (an incoming
// webhook URL is a credential) or the key.
func TestSendErrorsKeepTheSecret(t *testing.T) {
	const secretPath = "/services/T0/B0/s3cr3t-webhook-path"
	refusing, _ := standIn(t, http.StatusForbidden)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, tc := range []struct {
		name   string
		target notify.Target
		code   int
	}{
		{"refused", notify.Target{Provider: "slack", URL: refusing.URL + secretPath}, http.StatusForbidden},
		{"unreachable", notify.Target{Provider: "discord", URL: closed.URL + secretPath}, 0},
		{"not a URL", notify.Target{Provider: "teams", URL: "ftp://host" + secretPath}, 0},
		{"no key", notify.Target{Provider: "webhook", URL: refusing.URL + secretPath}, 0},
		{"unknown provider", notify.Target{Provider: "pager", URL: refusing.URL + secretPath}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := notify.Send(context.Background(), refusing.Client(), tc.target, failed)
			se, ok := errors.AsType[*notify.SendError](err)
			if !ok {
				t.Fatalf("error %v, want a *SendError", err)
			}
			if se.Code != tc.code {
				t.Errorf("code %d, want %d (%v)", se.Code, tc.code, err)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error %q quotes the address", err)
			}
		})
	}
}
