package commitstatus

import (
	"context"
	"net/http"
	"net/url"
)

// github posts to POST /repos/{owner}/{repo}/statuses/{sha} (GitHub.com and
// GitHub Enterprise Server) with a Bearer token.
type github struct {
	*host
	owner, repo string
}

var _ Poster = (*github)(nil)

// githubDescriptionMax is GitHub's limit; longer descriptions are refused.
const githubDescriptionMax = 140

func newGitHub(h *host, r Repository) (Poster, error) {
	owner, repo, err := r.ownerRepo()
	if err != nil {
		return nil, err
	}
	if err := h.creds.needToken(h.provider); err != nil {
		return nil, err
	}
	return &github{host: h, owner: owner, repo: repo}, nil
}

type githubStatus struct {
	State       string `json:"state"` // pending, success, failure, error
	Description string `json:"description"`
	Context     string `json:"context"`
}

func (g *github) Post(ctx context.Context, s Status) error {
	if err := checkCommit(g.provider, s.Commit); err != nil {
		return err
	}
	u := g.base + "/repos/" + url.PathEscape(g.owner) + "/" + url.PathEscape(g.repo) + "/statuses/" + s.Commit
	body := githubStatus{State: string(s.State), Description: clip(s.Description, githubDescriptionMax), Context: s.Context}
	return g.post(ctx, s.Commit, u, body, func(req *http.Request) {
		req.Header.Set("Authorization", "Bearer "+g.creds.Token)
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	})
}
