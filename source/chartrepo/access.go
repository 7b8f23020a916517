package chartrepo

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// Repository is one chart repository's credentials.
type Repository struct {
	// URL is the repository: an http(s):// Helm repository (matched
	// exactly, as repositories.yaml does, a trailing slash aside) or an
	// oci:// registry (matched by host, as `helm registry login`).
	URL string
	// Username and Password are sent as HTTP basic authentication (HTTP)
	// or to the registry's token service (OCI).
	Username, Password string
}

// Access is what one caller may present to chart repositories. The zero
// value is anonymous everywhere.
type Access struct {
	Repositories []Repository
	// Aliases are the URLs of the repositories dependencies name by alias
	// ("@NAME", "alias:NAME"), by NAME.
	Aliases map[string]string
	// Trust are the keys the charts of some repositories must be signed
	// with: a chart of a repository a Trust covers is resolved only when
	// each such Trust verifies it (Fetcher.Verify).
	Trust []Trust
}

// forURL returns the credentials for repo, if any.
func (a Access) forURL(repo string) (Repository, bool) {
	if host, ok := ociHost(repo); ok {
		for _, r := range a.Repositories {
			if h, ok := ociHost(r.URL); ok && h == host {
				return r, true
			}
		}
		return Repository{}, false
	}
	want := strings.TrimSuffix(repo, "/")
	for _, r := range a.Repositories {
		if strings.TrimSuffix(r.URL, "/") == want {
			return r, true
		}
	}
	return Repository{}, false
}

// ociHost is the registry host of an oci:// URL.
func ociHost(repo string) (string, bool) {
	rest, ok := strings.CutPrefix(repo, "oci://")
	if !ok {
		return "", false
	}
	host, _, _ := strings.Cut(rest, "/")
	return host, true
}

// keySalt makes Access keys useless outside this process: they are
// compared, never reversed, and never leave memory.
var keySalt = func() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}()

// Key names the credentials repo is read with, so a cache of what a
// repository answered one caller is never handed to a caller with other
// (or no) credentials. It is a salted hash, never the credentials.
func (a Access) Key(repo string) string {
	r, ok := a.forURL(repo)
	if !ok {
		return "anonymous"
	}
	h := sha256.New()
	h.Write(keySalt)
	for _, s := range []string{r.Username, r.Password} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// sameHost reports whether a chart URL is on the repository's host (and
// scheme), where the repository's credentials may be sent.
func sameHost(repo, chart *url.URL) bool {
	return repo.Scheme == chart.Scheme && repo.Host == chart.Host
}

// Fingerprint names all of a's credentials at once (a salted hash), for
// callers that must not share work done with other credentials.
func (a Access) Fingerprint() string {
	if len(a.Repositories) == 0 && len(a.Aliases) == 0 && len(a.Trust) == 0 {
		return "anonymous"
	}
	h := sha256.New()
	h.Write(keySalt)
	for _, r := range a.Repositories {
		for _, s := range []string{r.URL, r.Username, r.Password} {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
	}
	// The aliases decide which repository a dependency is read from.
	for _, name := range slices.Sorted(maps.Keys(a.Aliases)) {
		h.Write([]byte("alias\x00" + name + "\x00" + a.Aliases[name] + "\x00"))
	}
	// Verification is asked at every Resolve, so what a render cached
	// under one key set is never handed out unverified; the keys are in
	// the fingerprint all the same, so no cache outlives a revoked key.
	for _, t := range a.Trust {
		h.Write([]byte("trust\x00" + t.Mode + "\x00" + t.URL + "\x00" + t.Sum + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}
