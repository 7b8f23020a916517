package commitstatus

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
)

// Repository is a repository as a Git URL names it.
type Repository struct {
	// Host is the host name, with the port for http(s) URLs; empty for a
	// file:// URL or a local path.
	Host string
	// Path is the repository's path on the host, without a leading slash or
	// a ".git" suffix: "owner/repo", "group/subgroup/project".
	Path string
}

// scpLike matches Git's "user@host:path" form.
var scpLike = regexp.MustCompile(`^(?:[^@/]+@)?([^:/]+):(.+)$`)

// ParseRepository reads a repository's host and path from a Git URL:
// https://host/owner/repo(.git), ssh://git@host[:port]/owner/repo.git,
// git@host:owner/repo.git, or file:///path. A path with empty, "." or ".."
// segments is refused: it would address something else on the API.
func ParseRepository(raw string) (Repository, error) {
	var r Repository
	if scheme, _, ok := strings.Cut(raw, "://"); ok {
		u, err := url.Parse(raw)
		if err != nil {
			return r, fmt.Errorf("source url %s is not a URL", redactURL(raw))
		}
		r.Host, r.Path = u.Host, u.Path
		switch scheme {
		case "file":
			r.Host = ""
		case "http", "https":
		default: // ssh and git: the port is Git's, not the web's
			r.Host = u.Hostname()
		}
	} else {
		m := scpLike.FindStringSubmatch(raw)
		if m == nil {
			return r, fmt.Errorf("source url %s names no repository on a Git host", redactURL(raw))
		}
		r.Host, r.Path = m[1], m[2]
	}
	r.Path = strings.TrimSuffix(strings.Trim(r.Path, "/"), ".git")
	if r.Path == "" {
		return r, fmt.Errorf("source url %s names no repository path", redactURL(raw))
	}
	for seg := range strings.SplitSeq(r.Path, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return r, fmt.Errorf("source url %s has a path with an empty, . or .. segment", redactURL(raw))
		}
	}
	return r, nil
}

// ownerRepo returns the last two segments of the path: GitHub's and
// Gitea's owner and repository, Bitbucket's workspace and repository.
func (r Repository) ownerRepo() (owner, repo string, err error) {
	segs := strings.Split(r.Path, "/")
	if len(segs) < 2 {
		return "", "", fmt.Errorf("repository path %q is not OWNER/REPO", r.Path)
	}
	return segs[len(segs)-2], segs[len(segs)-1], nil
}

// apiBase returns the API base URL: address when set, else the provider's
// public API or the path its self-hosted servers serve the API under.
func apiBase(provider string, r Repository, address string) (string, error) {
	if address != "" {
		u, err := url.Parse(address)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return "", fmt.Errorf("API address %s is not an http(s) URL", redactURL(address))
		}
		if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return "", fmt.Errorf("API address %s must not carry credentials, a query or a fragment", redactURL(address))
		}
		return strings.TrimRight(address, "/"), nil
	}
	if r.Host == "" {
		return "", fmt.Errorf("API address is required: the source url names no host")
	}
	name := r.Host
	if h, _, err := net.SplitHostPort(r.Host); err == nil {
		name = h
	}
	switch provider {
	case "github":
		if name == "github.com" {
			return "https://api.github.com", nil
		}
		return "https://" + r.Host + "/api/v3", nil
	case "gitlab":
		return "https://" + r.Host + "/api/v4", nil
	case "gitea":
		return "https://" + r.Host + "/api/v1", nil
	case "bitbucket":
		if name == "bitbucket.org" {
			return "https://api.bitbucket.org/2.0", nil
		}
		return "", fmt.Errorf("API address is required for bitbucket on %s (only Bitbucket Cloud's API is known)", name)
	}
	return "", fmt.Errorf("commit status provider %q unknown (want one of %s)", provider, strings.Join(Providers, ", "))
}

// redactURL drops a URL's user information (a token in https://TOKEN@host).
func redactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw // user@host:path carries a user name at most
	}
	authority, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		authority = authority[i+1:]
	}
	if path != "" {
		return scheme + "://" + authority + "/" + path
	}
	return scheme + "://" + authority
}

// validCommit matches a full SHA-1 or SHA-256 commit ID.
var validCommit = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

func checkCommit(provider, commit string) error {
	if !validCommit.MatchString(commit) {
		return &PostError{Provider: provider, Commit: commit, Message: "not a full hex commit ID"}
	}
	return nil
}
