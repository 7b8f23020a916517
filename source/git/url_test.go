package git

import (
	"strings"
	"testing"
	"unicode"
)

func TestRedactURL(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"user and password", "https://user:token@github.com/org/repo.git", "https://***@github.com/org/repo.git"},
		{"token as user", "https://ghp_abc123@github.com/org/repo", "https://***@github.com/org/repo"},
		{"ssh user and port", "ssh://git@example.com:2222/org/repo.git", "ssh://***@example.com:2222/org/repo.git"},
		{"no credentials", "https://github.com/org/repo", "https://github.com/org/repo"},
		{"scp-like", "git@github.com:org/repo.git", "git@github.com:org/repo.git"},
		{"local path", "/srv/git/repo", "/srv/git/repo"},
		{"unparseable with credentials", "https://user:p%zz@host/x", "https://***@host/x"},
		{"password with @", "https://user:p@ss@host/x", "https://***@host/x"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RedactURL(tt.in); got != tt.want {
				t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRedactText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"url in an error", `fetch "https://user:s3cret@host/org/repo" failed: 401`, `fetch "https://***@host/org/repo" failed: 401`},
		{"two urls", "a https://x:y@h1/p and ssh://git@h2/q", "a https://***@h1/p and ssh://***@h2/q"},
		{"no url", "nothing to hide", "nothing to hide"},
		{"url without credentials", "see https://host/a@b", "see https://host/a@b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RedactText(tt.in); got != tt.want {
				t.Errorf("RedactText(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestNormalizeRepoURL(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"https", "https://github.com/org/repo", "github.com/org/repo"},
		{"https .git", "https://github.com/org/repo.git", "github.com/org/repo"},
		{"trailing slash", "https://github.com/org/repo/", "github.com/org/repo"},
		{"trailing .git/", "https://github.com/org/repo.git/", "github.com/org/repo"},
		{"host case", "https://GitHub.COM/org/repo", "github.com/org/repo"},
		{"credentials dropped", "https://user:token@github.com/org/repo.git", "github.com/org/repo"},
		{"default https port", "https://github.com:443/org/repo", "github.com/org/repo"},
		{"other port kept", "https://git.example.com:8443/org/repo", "git.example.com:8443/org/repo"},
		{"http default port", "http://git.example.com:80/org/repo", "git.example.com/org/repo"},
		{"ssh", "ssh://git@github.com/org/repo.git", "github.com/org/repo"},
		{"ssh default port", "ssh://git@github.com:22/org/repo.git", "github.com/org/repo"},
		{"ssh other port", "ssh://git@bitbucket.example.com:7999/org/repo.git", "bitbucket.example.com:7999/org/repo"},
		{"scp-like", "git@github.com:org/repo.git", "github.com/org/repo"},
		{"scp-like without user", "github.com:org/repo", "github.com/org/repo"},
		{"git protocol", "git://github.com/org/repo.git", "github.com/org/repo"},
		{"query and fragment dropped", "https://github.com/org/repo?x=1#y", "github.com/org/repo"},
		{"surrounding space", "  https://github.com/org/repo \n", "github.com/org/repo"},
		{"file url", "file:///srv/git/repo.git", "file:///srv/git/repo"},
		{"local path matches file url", "/srv/git/repo.git", "file:///srv/git/repo"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NormalizeRepoURL(tt.in); got != tt.want {
				t.Errorf("NormalizeRepoURL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzRedactURL checks that a password in a parseable URL never survives redaction.
func FuzzRedactURL(f *testing.F) {
	f.Add("https", "user", "s3cretvalue", "github.com/org/repo")
	f.Add("ssh", "git", "hunter2hunter2", "host:22/x")
	f.Fuzz(func(t *testing.T, scheme, user, pass, rest string) {
		// Redaction is defined for URLs whose userinfo has no separators or
		// whitespace (which would end a URL quoted in free text).
		if len(pass) < 8 || strings.ContainsAny(pass+user, "/@:?#%") || strings.IndexFunc(pass+user, unicode.IsSpace) >= 0 ||
			scheme == "" || strings.ContainsAny(scheme, ":/@") {
			t.Skip()
		}
		raw := scheme + "://" + user + ":" + pass + "@" + rest
		// The password may also occur, by chance, in the scheme or the rest.
		allowed := strings.Count(scheme+"://"+rest, pass)
		if got := RedactURL(raw); strings.Count(got, pass) > allowed {
			t.Errorf("RedactURL(%q) = %q still holds the password", raw, got)
		}
		if got := RedactText("error: " + raw); strings.Count(got, pass) > allowed {
			t.Errorf("RedactText(%q) = %q still holds the password", raw, got)
		}
	})
}
