package git

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"gitsync.dev/gitsync/source/git/githubapp"
)

// GitHubAppUser is the user name Git over HTTPS takes with an installation
// token.
const GitHubAppUser = "x-access-token"

// UseGitHubApp mints (or takes from tokens' cache) the installation token
// of a.GitHubApp for the repository at repoURL and makes it the HTTPS
// password. It returns the token, for the caller's redactor; nothing to do
// (and "") when a names no app. The repository's owner/repo is the URL's
// path, which the installation lookup needs. Its errors are
// *githubapp.Error (or ErrInvalidSource for a URL a token cannot serve)
// and carry no key, JWT or token.
func (a *Auth) UseGitHubApp(ctx context.Context, tokens *githubapp.Tokens, repoURL string) (string, error) {
	if a == nil || a.GitHubApp == nil {
		return "", nil
	}
	if len(a.GitHubApp.PrivateKey) == 0 {
		return "", fmt.Errorf("%s names GitHub App %s but has no %s: %w", a.origin, a.GitHubApp.ID, githubapp.SecretKeyPrivateKey, ErrInvalidSource)
	}
	repo, err := githubRepo(repoURL)
	if err != nil {
		return "", err
	}
	if tokens == nil {
		return "", fmt.Errorf("GitHub App credentials in %s cannot be used here: %w", a.origin, ErrInvalidSource)
	}
	tok, err := tokens.Token(ctx, *a.GitHubApp, repo)
	if err != nil {
		return "", err
	}
	a.Username, a.Password, a.BearerToken = GitHubAppUser, tok.Value, ""
	return tok.Value, nil
}

// githubRepo is "owner/repo" of an https URL of a GitHub repository.
func githubRepo(raw string) (string, error) {
	ep, err := transport.NewEndpoint(raw)
	if err != nil {
		return "", fmt.Errorf("source url %s invalid: %w", RedactURL(raw), ErrInvalidSource)
	}
	if ep.Protocol != "https" && ep.Protocol != "http" {
		return "", fmt.Errorf("a GitHub App token authenticates Git over HTTPS; source url %s is %s (use https://HOST/OWNER/REPO): %w",
			RedactURL(raw), ep.Protocol, ErrInvalidSource)
	}
	path := strings.TrimSuffix(strings.Trim(ep.Path, "/"), ".git")
	owner, repo, ok := strings.Cut(path, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return "", fmt.Errorf("source url %s does not name OWNER/REPO on GitHub: %w", RedactURL(raw), ErrInvalidSource)
	}
	return owner + "/" + repo, nil
}
