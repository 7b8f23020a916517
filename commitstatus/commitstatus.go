package commitstatus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"gitsync.dev/gitsync/internal/clip"
)

// State is what gitsync says about a commit; each provider maps it to its
// host's word.
type State string

const (
	// Pending: the revision is being applied or waited on.
	Pending State = "pending"
	// Success: the revision is applied and Ready.
	Success State = "success"
	// Failure: the revision failed to fetch, render, apply or become healthy.
	Failure State = "failure"
)

// Status is one report on one commit.
type Status struct {
	// Commit is the full hex SHA of the commit.
	Commit string
	State  State
	// Description is the reason, clipped to the host's limit by Post.
	Description string
	// Context names the status among others on the commit
	// (gitsync/NAMESPACE/NAME by default); reporting again with the same
	// Context replaces the earlier status.
	Context string
}

// Poster sets commit statuses on one repository.
type Poster interface {
	// Post sets s on its commit; it returns a *PostError when the host
	// refused it.
	Post(ctx context.Context, s Status) error
}

// Providers are the accepted Options.Provider values.
var Providers = []string{"github", "gitlab", "gitea", "bitbucket"}

// Credentials authenticate to the host's API. Token is used alone
// (GitHub, GitLab, Gitea, Bitbucket access tokens); Username and Password
// are Bitbucket's app password, sent with basic authentication.
type Credentials struct {
	Token              string
	Username, Password string
}

// secrets returns the values no error may carry.
func (c Credentials) secrets() []string {
	var out []string
	for _, s := range []string{c.Token, c.Password} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Options say where to post.
type Options struct {
	// Provider is github, gitlab, gitea or bitbucket.
	Provider string
	// RepoURL is the repository's Git URL (spec.source.url): it names the
	// repository on the host, and the host when Address is empty.
	RepoURL string
	// Address is the API's base URL; empty derives it from RepoURL's host.
	Address string
	// Credentials are the tenant's token or app password.
	Credentials Credentials
	// Client sends the requests; NewHTTPClient builds the one to use. A nil
	// Client is refused: the package never falls back to a client that
	// skips the egress policy.
	Client *http.Client
}

// New returns the Poster for o.Provider, checking that RepoURL names a
// repository the host's API can address.
func New(o Options) (Poster, error) {
	if o.Client == nil {
		return nil, errors.New("commit status client missing")
	}
	repo, err := ParseRepository(o.RepoURL)
	if err != nil {
		return nil, err
	}
	base, err := apiBase(o.Provider, repo, o.Address)
	if err != nil {
		return nil, err
	}
	h := &host{provider: o.Provider, base: base, client: o.Client, creds: o.Credentials}
	switch o.Provider {
	case "github":
		return newGitHub(h, repo)
	case "gitlab":
		return newGitLab(h, repo)
	case "gitea":
		return newGitea(h, repo)
	case "bitbucket":
		return newBitbucket(h, repo)
	}
	return nil, fmt.Errorf("commit status provider %q unknown (want one of %s)", o.Provider, strings.Join(Providers, ", "))
}

// PostError is a status the host did not accept, or could not be asked.
type PostError struct {
	// Provider and Commit say which post failed.
	Provider, Commit string
	// What was posted: "" for a commit status, or e.g. "pull request
	// comment".
	What string
	// Code is the HTTP status code of the answer; 0 when there was none
	// (refused by the egress policy, timed out, connection failed).
	Code int
	// Message is the host's short explanation or the transport error,
	// without credentials.
	Message string
}

func (e *PostError) Error() string {
	kind := e.What
	if kind == "" {
		kind = "commit status"
	}
	what := fmt.Sprintf("%s %s for %s failed", e.Provider, kind, shortSHA(e.Commit))
	if e.Code != 0 {
		what += fmt.Sprintf(": HTTP %d", e.Code)
	}
	if e.Message != "" {
		what += ": " + e.Message
	}
	return what
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// host is what every provider shares: the API base URL, the client and the
// credentials.
type host struct {
	provider string
	base     string
	client   *http.Client
	creds    Credentials
}

// maxAnswer bounds how much of a host's answer is read; maxListAnswer
// bounds an answer that is decoded (a list of pull requests).
const (
	maxAnswer     = 16 << 10
	maxListAnswer = 4 << 20
)

// post sends body as JSON to url with the auth header set by auth, and
// turns anything but a 2xx answer into a *PostError.
func (h *host) post(ctx context.Context, commit, url string, body any, auth func(*http.Request)) error {
	return h.do(ctx, "", http.MethodPost, commit, url, body, auth, nil)
}

// do sends one request (body as JSON unless nil) with the auth header set
// by auth, decodes a 2xx answer into answer (unless nil), and turns any
// other answer into a *PostError about what ("" is a commit status).
func (h *host) do(ctx context.Context, what, method, commit, url string, body any, auth func(*http.Request), answer any) error {
	fail := func(code int, msg string) error {
		return &PostError{Provider: h.provider, What: what, Commit: commit, Code: code, Message: h.redact(msg)}
	}
	var data io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fail(0, err.Error())
		}
		data = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, data)
	if err != nil {
		return fail(0, err.Error())
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "gitsync")
	auth(req)
	resp, err := h.client.Do(req)
	if err != nil {
		return fail(0, transportMessage(err))
	}
	defer resp.Body.Close()
	limit := int64(maxAnswer)
	if answer != nil {
		limit = maxListAnswer
	}
	got, _ := io.ReadAll(io.LimitReader(resp.Body, limit))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fail(resp.StatusCode, answerMessage(got))
	}
	if answer != nil {
		if err := json.Unmarshal(got, answer); err != nil {
			return fail(resp.StatusCode, "the answer is not the JSON expected")
		}
	}
	return nil
}

// redact cuts the credentials out of s, in case a host echoes them.
func (h *host) redact(s string) string {
	for _, secret := range h.creds.secrets() {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	return s
}

// transportMessage is a failed request's cause without the request's URL
// (which carries nothing secret, but repeats what the caller knows).
func transportMessage(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err.Error()
	}
	return err.Error()
}

// answerMessage finds the host's explanation in an error answer: GitHub,
// GitLab and Gitea say {"message": ...}, Bitbucket {"error": {"message":
// ...}}; anything else is not quoted.
func answerMessage(answer []byte) string {
	var doc struct {
		Message any `json:"message"`
		Error   struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(answer, &doc) != nil {
		return ""
	}
	msg := doc.Error.Message
	switch m := doc.Message.(type) {
	case string:
		msg = m
	case nil:
	default: // GitLab answers validation errors as an object
		if b, err := json.Marshal(m); err == nil {
			msg = string(b)
		}
	}
	return clip.To(msg, 200)
}

func (c Credentials) needToken(provider string) error {
	if c.Token == "" {
		return fmt.Errorf("%s credentials missing: the Secret needs a token key", provider)
	}
	return nil
}
