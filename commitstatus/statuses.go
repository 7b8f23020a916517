package commitstatus

import (
	"context"
	"net/http"
	"net/url"

	"gitsync.dev/gitsync/internal/clip"
)

// statuses posts to POST /repos/{owner}/{repo}/statuses/{sha}, the API that
// GitHub (GitHub.com and GitHub Enterprise Server) and Gitea (and Forgejo)
// share. They differ only in how the token is sent and in the longest
// description they take.
type statuses struct {
	*host
	owner, repo string
	// descriptionMax is the host's limit; longer descriptions are refused.
	descriptionMax int
	// auth sets the token and the host's API headers on a request.
	auth func(req *http.Request, token string)
}

var _ Poster = (*statuses)(nil)

func newGitHub(h *host, r Repository) (Poster, error) {
	return newStatuses(h, r, 140, githubAuth)
}

// githubAuth sends a GitHub token with the REST API's media type and
// version.
func githubAuth(req *http.Request, token string) {
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
}

// newGitea keeps descriptions to what every Gitea version stores.
func newGitea(h *host, r Repository) (Poster, error) {
	return newStatuses(h, r, 255, func(req *http.Request, token string) {
		req.Header.Set("Authorization", "token "+token)
	})
}

func newStatuses(h *host, r Repository, descriptionMax int, auth func(*http.Request, string)) (Poster, error) {
	owner, repo, err := r.ownerRepo()
	if err != nil {
		return nil, err
	}
	if err := h.creds.needToken(h.provider); err != nil {
		return nil, err
	}
	return &statuses{host: h, owner: owner, repo: repo, descriptionMax: descriptionMax, auth: auth}, nil
}

// statusBody is the status both hosts take; state is one of pending,
// success and failure on both (they know error, and Gitea warning, too).
type statusBody struct {
	State       string `json:"state"`
	Description string `json:"description"`
	Context     string `json:"context"`
}

func (p *statuses) Post(ctx context.Context, s Status) error {
	if err := checkCommit(p.provider, s.Commit); err != nil {
		return err
	}
	u := p.base + "/repos/" + url.PathEscape(p.owner) + "/" + url.PathEscape(p.repo) + "/statuses/" + s.Commit
	body := statusBody{State: string(s.State), Description: clip.To(s.Description, p.descriptionMax), Context: s.Context}
	return p.post(ctx, s.Commit, u, body, func(req *http.Request) { p.auth(req, p.creds.Token) })
}
