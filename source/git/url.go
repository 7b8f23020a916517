package git

import (
	"net/url"
	"regexp"
	"strings"
)

// RedactURL removes credentials from a repository URL so it can appear in
// errors, logs, events and status: "https://user:token@host/x" becomes
// "https://***@host/x". Strings that are not URLs are returned with any
// userinfo-looking prefix masked the same way.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err == nil && u.User != nil && u.Scheme != "" {
		u.User = nil
		s := u.String()
		return strings.Replace(s, u.Scheme+"://", u.Scheme+"://***@", 1)
	}
	return userinfoPattern.ReplaceAllString(raw, "${1}***@")
}

// userinfoPattern matches "://anything-without-slash@" inside free text, such
// as an error message that quotes a URL. It does not insist on a valid scheme
// before "://": a malformed URL must not keep its password.
var userinfoPattern = regexp.MustCompile(`(://)[^/\s@]+@`)

// RedactText masks credentials of every URL that appears inside s; used on
// error messages from libraries that quote the URL they were given.
func RedactText(s string) string {
	return userinfoPattern.ReplaceAllString(s, "${1}***@")
}

// NormalizeRepoURL reduces the many spellings of one repository to one key, so
// a webhook payload's URL matches a GitSync's spec.source.url: scheme and
// credentials dropped, host lower-cased, default ports, trailing "/" and ".git"
// removed; scp-style "git@host:org/repo" becomes "host/org/repo".
func NormalizeRepoURL(raw string) string {
	s := strings.TrimSpace(raw)
	if !strings.Contains(s, "://") {
		// scp-like syntax: [user@]host:path
		if at := strings.Index(s, "@"); at >= 0 && at < strings.Index(s, ":") {
			s = s[at+1:]
		}
		if i := strings.Index(s, ":"); i > 0 && !strings.HasPrefix(s, "/") {
			s = "ssh://" + s[:i] + "/" + strings.TrimPrefix(s[i+1:], "/")
		} else {
			path := strings.TrimSuffix(strings.TrimSuffix(s, "/"), ".git")
			if strings.HasPrefix(path, "/") {
				// A local path names the same repository as its file:// URL.
				return "file://" + path
			}
			return path
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		return strings.TrimSuffix(strings.TrimSuffix(s, "/"), ".git")
	}
	host := strings.ToLower(u.Hostname())
	if p := u.Port(); p != "" && !isDefaultPort(u.Scheme, p) {
		host += ":" + p
	}
	path := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), ".git")
	if u.Scheme == "file" {
		return "file://" + path
	}
	return host + path
}

func isDefaultPort(scheme, port string) bool {
	switch scheme {
	case "https":
		return port == "443"
	case "http":
		return port == "80"
	case "ssh":
		return port == "22"
	}
	return false
}
