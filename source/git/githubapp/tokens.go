package githubapp

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/utils/clock"
)

// Keys of a Secret holding a GitHub App (spec.source.secretRef), the names
// Flux uses. SecretKeyAppID and SecretKeyPrivateKey are required.
const (
	SecretKeyAppID          = "githubAppID"
	SecretKeyInstallationID = "githubAppInstallationID"
	SecretKeyPrivateKey     = "githubAppPrivateKey"
	SecretKeyBaseURL        = "githubAppBaseURL"
)

// DefaultBaseURL is github.com's API.
const DefaultBaseURL = "https://api.github.com"

// App is one GitHub App as a Secret names it.
type App struct {
	// ID is the app id (or its client id): the JWT's issuer.
	ID string
	// InstallationID is the installation on the repository's owner; empty
	// looks it up for the repository.
	InstallationID string
	// PrivateKey is the app's PEM private key.
	PrivateKey []byte
	// BaseURL is the REST API's base: https://api.github.com (empty), or
	// https://HOST/api/v3 for GitHub Enterprise Server.
	BaseURL string
	// CAData is a PEM bundle trusted besides the system roots (an Enterprise
	// Server behind a private CA).
	CAData []byte
}

// FromSecret reads an App from a Secret's data; ok is false when the data
// names no app (no SecretKeyAppID).
func FromSecret(data map[string][]byte) (app *App, ok bool) {
	id := strings.TrimSpace(string(data[SecretKeyAppID]))
	if id == "" {
		return nil, false
	}
	return &App{
		ID:             id,
		InstallationID: strings.TrimSpace(string(data[SecretKeyInstallationID])),
		PrivateKey:     data[SecretKeyPrivateKey],
		BaseURL:        strings.TrimSpace(string(data[SecretKeyBaseURL])),
	}, true
}

func (a App) baseURL() string {
	if a.BaseURL == "" {
		return DefaultBaseURL
	}
	return a.BaseURL
}

// Token is an installation access token: Git's password, with user
// "x-access-token".
type Token struct {
	Value     string
	ExpiresAt time.Time
}

// Options configure Tokens.
type Options struct {
	// Client sends every request. Required: the agent's dials through the
	// egress policy; it should refuse redirects (a token request is never
	// redirected, and a redirect would carry the JWT elsewhere).
	Client *http.Client
	// Clock tells token expiry and signs JWTs; nil is the real clock.
	Clock clock.PassiveClock
	// RefreshBefore is how much life a cached token must have left to be
	// handed out; a fetch started with it must finish before it expires.
	// 0 means 5 minutes.
	RefreshBefore time.Duration
}

// Tokens is the cache of installation tokens, safe for concurrent use.
// Callers asking for the same app's token at once share one mint.
type Tokens struct {
	opts Options

	mu sync.Mutex
	// tokens by tokenKey; installations by lookupKey (the answer of a
	// lookup, dropped when its installation stops answering).
	tokens        map[string]*cached
	installations map[string]string
	clients       map[string]*http.Client
	lookups       singleflight.Group
}

type cached struct {
	mu  sync.Mutex // held while minting
	tok Token
}

// New validates and defaults opts.
func New(opts Options) (*Tokens, error) {
	if opts.Client == nil {
		return nil, errors.New("github app tokens: Client is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.RefreshBefore <= 0 {
		opts.RefreshBefore = 5 * time.Minute
	}
	return &Tokens{opts: opts, tokens: map[string]*cached{}, installations: map[string]string{}, clients: map[string]*http.Client{}}, nil
}

// Token returns a token of app for repo ("owner/repo"), from the cache
// while it has more than RefreshBefore left, else freshly minted. Its
// errors are *Error and carry no key, JWT or token.
func (t *Tokens) Token(ctx context.Context, app App, repo string) (Token, error) {
	key, err := parseKey(app.PrivateKey)
	if err != nil {
		return Token{}, &Error{App: app.ID, Op: opKey, Message: SecretKeyPrivateKey + " is unusable: " + err.Error()}
	}
	c, err := t.client(app.CAData)
	if err != nil {
		return Token{}, &Error{App: app.ID, Op: "trusting ca.crt", Message: err.Error()}
	}
	id := app.InstallationID
	lookup := identity(app, "repo", repo)
	if id == "" {
		t.mu.Lock()
		id = t.installations[lookup]
		t.mu.Unlock()
	}
	sign := func() (string, error) { return signJWT(key, app.ID, t.opts.Clock.Now()) }
	if id == "" {
		// Callers looking up the same installation at once share one request.
		v, err, _ := t.lookups.Do(lookup, func() (any, error) {
			jwt, err := sign()
			if err != nil {
				return "", &Error{App: app.ID, Op: opKey, Message: err.Error()}
			}
			id, err := t.installation(ctx, c, app, repo, jwt)
			if err == nil {
				t.mu.Lock()
				t.installations[lookup] = id
				t.mu.Unlock()
			}
			return id, err
		})
		if err != nil {
			return Token{}, err
		}
		id = v.(string)
	}
	tok, err := t.mint(ctx, c, app, id, sign)
	var e *Error
	if errors.As(err, &e) && e.Code == http.StatusNotFound && app.InstallationID == "" {
		// The app was installed again (a new id): look it up next time.
		t.mu.Lock()
		delete(t.installations, lookup)
		t.mu.Unlock()
	}
	return tok, err
}

// mint returns the cached token of installation id when it has life left,
// else exchanges a new JWT for one; one mint per key at a time.
func (t *Tokens) mint(ctx context.Context, c *http.Client, app App, id string, sign func() (string, error)) (Token, error) {
	key := identity(app, "installation", id)
	t.mu.Lock()
	e, ok := t.tokens[key]
	if !ok {
		t.sweep()
		e = &cached{}
		t.tokens[key] = e
	}
	t.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.tok.ExpiresAt.Sub(t.opts.Clock.Now()) > t.opts.RefreshBefore {
		return e.tok, nil
	}
	jwt, err := sign()
	if err != nil {
		return Token{}, &Error{App: app.ID, Op: opKey, Message: err.Error()}
	}
	tok, err := t.accessToken(ctx, c, app, id, jwt)
	if err != nil {
		return Token{}, err
	}
	e.tok = tok
	return tok, nil
}

// sweep drops expired tokens nobody is minting; t.mu is held.
func (t *Tokens) sweep() {
	now := t.opts.Clock.Now()
	for k, e := range t.tokens {
		if e.mu.TryLock() {
			if !e.tok.ExpiresAt.After(now) {
				delete(t.tokens, k)
			}
			e.mu.Unlock()
		}
	}
}

// identity is a digest of what a token or lookup depends on: the app, the
// API it asks, the private key, and the installation or repository.
func identity(app App, kind, what string) string {
	h := sha256.New()
	keySum := sha256.Sum256(app.PrivateKey)
	for _, s := range []string{app.ID, strings.TrimSuffix(app.baseURL(), "/"), hex.EncodeToString(keySum[:]), kind, what} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// client is Options.Client, or a copy of it trusting ca too.
func (t *Tokens) client(ca []byte) (*http.Client, error) {
	if len(ca) == 0 {
		return t.opts.Client, nil
	}
	sum := sha256.Sum256(ca)
	k := hex.EncodeToString(sum[:])
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.clients[k]; ok {
		return c, nil
	}
	tr, ok := t.opts.Client.Transport.(*http.Transport)
	if !ok {
		return nil, errors.New("the client has no *http.Transport to add a CA to")
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("ca.crt holds no PEM certificate")
	}
	tr = tr.Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	c := *t.opts.Client
	c.Transport = tr
	t.clients[k] = &c
	return &c, nil
}
