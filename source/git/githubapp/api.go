package githubapp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// apiVersion is the REST API version the requests are written for.
const apiVersion = "2022-11-28"

// maxAnswer bounds what is read of an answer: a token answer is well under
// 4 KiB, and an error's message is clipped anyway.
const maxAnswer = 64 << 10

// Error is a token GitHub did not give. It carries what a person needs to
// fix it and never a key, JWT or token.
type Error struct {
	// App is the app id as the Secret gave it.
	App string
	// Op is what was asked: "installation lookup for owner/repo", "token for
	// installation 123", or "private key" for a key that did not parse.
	Op string
	// Code is GitHub's HTTP status; 0 when there was no answer.
	Code int
	// Message is GitHub's explanation, or the cause.
	Message string
	// Hint says what to change, when the code tells.
	Hint string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("GitHub App %s: %s failed", e.App, e.Op)
	if e.Code != 0 {
		s += fmt.Sprintf(": HTTP %d", e.Code)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// Permanent reports whether asking again cannot help until the Secret or
// the app's installation changes: a key that does not parse, a JWT GitHub
// refused (401), or an app or installation it does not know (404), or
// refused (403, 422). Others (no answer, 5xx, 429) pass with time.
func (e *Error) Permanent() bool {
	switch e.Code {
	case 0:
		return e.Op == opKey
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

const opKey = "reading the private key"

// call sends one request signed with jwt and decodes a 2xx answer into out.
func (t *Tokens) call(ctx context.Context, c *http.Client, app App, op, method, path, jwt string, out any) error {
	base := strings.TrimSuffix(app.baseURL(), "/")
	req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
	if err != nil {
		return &Error{App: app.ID, Op: op, Message: fmt.Sprintf("API base URL %q invalid", base)}
	}
	req.Header.Set("Authorization", "Bearer "+jwt)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", apiVersion)
	req.Header.Set("User-Agent", "gitsync")
	resp, err := c.Do(req)
	if err != nil {
		return &Error{App: app.ID, Op: op, Message: transportMessage(err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode/100 != 2 {
		return &Error{App: app.ID, Op: op, Code: resp.StatusCode, Message: githubMessage(body, resp.Status)}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return &Error{App: app.ID, Op: op, Code: resp.StatusCode, Message: "the answer is not the JSON GitHub sends"}
	}
	return nil
}

// installation looks up the installation of the app on owner/repo.
func (t *Tokens) installation(ctx context.Context, c *http.Client, app App, repo, jwt string) (string, error) {
	op := "installation lookup for " + repo
	var ans struct {
		ID int64 `json:"id"`
	}
	err := t.call(ctx, c, app, op, http.MethodGet, "/repos/"+escapeRepo(repo)+"/installation", jwt, &ans)
	if e, ok := err.(*Error); ok && e.Code == http.StatusNotFound {
		e.Hint = "the app is not installed on " + repo + " (install it there, or set " + SecretKeyInstallationID + ")"
	}
	if err != nil {
		return "", hinted(err)
	}
	if ans.ID == 0 {
		return "", &Error{App: app.ID, Op: op, Message: "the answer names no installation"}
	}
	return strconv.FormatInt(ans.ID, 10), nil
}

// accessToken exchanges jwt for a token of installation id.
func (t *Tokens) accessToken(ctx context.Context, c *http.Client, app App, id, jwt string) (Token, error) {
	op := "token for installation " + id
	var ans struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	err := t.call(ctx, c, app, op, http.MethodPost, "/app/installations/"+url.PathEscape(id)+"/access_tokens", jwt, &ans)
	if e, ok := err.(*Error); ok && e.Code == http.StatusNotFound {
		e.Hint = "the app has no installation " + id + " (check " + SecretKeyInstallationID + ")"
	}
	if err != nil {
		return Token{}, hinted(err)
	}
	if ans.Token == "" || ans.ExpiresAt.IsZero() {
		return Token{}, &Error{App: app.ID, Op: op, Message: "the answer has no token or expiry"}
	}
	return Token{Value: ans.Token, ExpiresAt: ans.ExpiresAt}, nil
}

// hinted adds the usual fix for a refused JWT.
func hinted(err error) error {
	if e, ok := err.(*Error); ok && e.Hint == "" && e.Code == http.StatusUnauthorized {
		e.Hint = "GitHub refused the app's JWT: check the app id and that the private key is the app's current one"
	}
	return err
}

// githubMessage is the "message" of GitHub's error answer, clipped and
// without control characters, or the status line.
func githubMessage(body []byte, status string) string {
	var ans struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &ans) != nil || ans.Message == "" {
		return status
	}
	msg := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, ans.Message)
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}

// transportMessage is a transport error without the request's URL
// repeated (the error names the op already).
func transportMessage(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err.Error()
	}
	return err.Error()
}

// escapeRepo escapes each segment of "owner/repo".
func escapeRepo(repo string) string {
	segs := strings.Split(repo, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
