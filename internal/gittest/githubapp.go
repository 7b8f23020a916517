package gittest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// GitHubApp is a stand-in for GitHub's App API on loopback: it checks
// each request's JWT (RS256 signature against the app's public key, iss,
// iat, exp as GitHub does), answers the installation lookup of the
// repositories it is installed on, and mints installation tokens.
type GitHubApp struct {
	// URL is the API base URL (as githubAppBaseURL).
	URL string
	// ID and InstallationID are the app's; KeyPEM is its PKCS #1 private
	// key, as GitHub hands it out.
	ID, InstallationID string
	KeyPEM             []byte

	srv                      *httptest.Server
	opts                     GitHubAppOptions
	mu                       sync.Mutex
	mints, lookups, statuses int
	last                     string
}

// GitHubAppOptions shape a stand-in.
type GitHubAppOptions struct {
	// Repos are the "owner/repo" the app is installed on.
	Repos []string
	// TokenTTL is the life of each token; 0 is an hour, as GitHub's.
	TokenTTL time.Duration
	// Now is the stand-in's clock (JWT checks and token expiry); nil is
	// time.Now.
	Now func() time.Time
	// OnToken is told each token minted (a Git server's SetPassword).
	OnToken func(token string)
}

// NewGitHubApp starts a stand-in with a fresh 2048-bit key, stopped when
// the test ends.
func NewGitHubApp(t testing.TB, o GitHubAppOptions) *GitHubApp {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if o.TokenTTL == 0 {
		o.TokenTTL = time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	a := &GitHubApp{
		ID:             "12345",
		InstallationID: "678",
		KeyPEM:         pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		opts:           o,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/{owner}/{repo}/installation", func(w http.ResponseWriter, r *http.Request) {
		if !a.checkJWT(w, r, &key.PublicKey) {
			return
		}
		repo := r.PathValue("owner") + "/" + r.PathValue("repo")
		for _, installed := range o.Repos {
			if installed == repo {
				a.mu.Lock()
				a.lookups++
				a.mu.Unlock()
				fmt.Fprintf(w, `{"id":%s,"app_id":%s}`, a.InstallationID, a.ID)
				return
			}
		}
		apiError(w, http.StatusNotFound, "Not Found")
	})
	mux.HandleFunc("POST /app/installations/{id}/access_tokens", func(w http.ResponseWriter, r *http.Request) {
		if !a.checkJWT(w, r, &key.PublicKey) {
			return
		}
		if r.PathValue("id") != a.InstallationID {
			apiError(w, http.StatusNotFound, "Not Found")
			return
		}
		buf := make([]byte, 16)
		rand.Read(buf)
		tok := "ghs_" + hex.EncodeToString(buf)
		a.mu.Lock()
		a.mints++
		a.last = tok
		a.mu.Unlock()
		if o.OnToken != nil {
			o.OnToken(tok)
		}
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"token": tok, "expires_at": o.Now().Add(o.TokenTTL).UTC().Format(time.RFC3339)})
	})
	// Commit statuses, as GitHub takes them: only with the last token minted.
	mux.HandleFunc("POST /repos/{owner}/{repo}/statuses/{sha}", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		ok := a.last != "" && r.Header.Get("Authorization") == "Bearer "+a.last
		if ok {
			a.statuses++
		}
		a.mu.Unlock()
		if !ok {
			apiError(w, http.StatusUnauthorized, "Bad credentials")
			return
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"id":1}`)
	})
	a.srv = httptest.NewServer(mux)
	a.URL = a.srv.URL
	t.Cleanup(a.srv.Close)
	return a
}

// Mints is how many tokens were handed out; Lookups how many installation
// lookups answered; Token the last token.
func (a *GitHubApp) Mints() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mints
}

func (a *GitHubApp) Lookups() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lookups
}

// Statuses is how many commit statuses were posted with the last token.
func (a *GitHubApp) Statuses() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.statuses
}

func (a *GitHubApp) Token() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last
}

// Secret is the data of a source Secret naming the app; with
// installation false it leaves the installation to be looked up.
func (a *GitHubApp) Secret(installation bool) map[string][]byte {
	d := map[string][]byte{"githubAppID": []byte(a.ID), "githubAppPrivateKey": a.KeyPEM, "githubAppBaseURL": []byte(a.URL)}
	if installation {
		d["githubAppInstallationID"] = []byte(a.InstallationID)
	}
	return d
}

// checkJWT answers 401 as GitHub does unless the request carries a JWT
// signed by pub for this app, issued at or before now and expiring after
// now but within 10 minutes.
func (a *GitHubApp) checkJWT(w http.ResponseWriter, r *http.Request, pub *rsa.PublicKey) bool {
	if msg := a.jwtProblem(r, pub); msg != "" {
		apiError(w, http.StatusUnauthorized, msg)
		return false
	}
	return true
}

func (a *GitHubApp) jwtProblem(r *http.Request, pub *rsa.PublicKey) string {
	jwt, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	parts := strings.Split(jwt, ".")
	if !ok || len(parts) != 3 {
		return "A JSON web token could not be decoded"
	}
	var header struct{ Alg string }
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	sig, err2 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || json.Unmarshal(hb, &header) != nil || header.Alg != "RS256" {
		return "A JSON web token could not be decoded"
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) != nil {
		return "A JSON web token could not be decoded"
	}
	var claims struct {
		Iat, Exp int64
		Iss      json.RawMessage
	}
	cb, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(cb, &claims) != nil {
		return "A JSON web token could not be decoded"
	}
	if iss := strings.Trim(string(claims.Iss), `"`); iss != a.ID {
		return "Integration not found"
	}
	now := a.opts.Now().Unix()
	switch {
	case claims.Iat > now:
		return "'Issued at' claim ('iat') must be an Integer representing a time in the past"
	case claims.Exp <= now:
		return "'Expiration time' claim ('exp') is too far in the past"
	case claims.Exp > now+600:
		return "'Expiration time' claim ('exp') is too far in the future"
	}
	return ""
}

func apiError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest"})
}
