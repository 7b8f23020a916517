package commitstatus

import (
	"context"
	"net/http"
	"net/url"
)

// gitea posts to POST /repos/{owner}/{repo}/statuses/{sha} (Gitea and
// Forgejo) with "Authorization: token".
type gitea struct {
	*host
	owner, repo string
}

var _ Poster = (*gitea)(nil)

// giteaDescriptionMax keeps descriptions to what every Gitea version stores.
const giteaDescriptionMax = 255

func newGitea(h *host, r Repository) (Poster, error) {
	owner, repo, err := r.ownerRepo()
	if err != nil {
		return nil, err
	}
	if err := h.creds.needToken(h.provider); err != nil {
		return nil, err
	}
	return &gitea{host: h, owner: owner, repo: repo}, nil
}

type giteaStatus struct {
	State       string `json:"state"` // pending, success, error, failure, warning
	Description string `json:"description"`
	Context     string `json:"context"`
}

func (g *gitea) Post(ctx context.Context, s Status) error {
	if err := checkCommit(g.provider, s.Commit); err != nil {
		return err
	}
	u := g.base + "/repos/" + url.PathEscape(g.owner) + "/" + url.PathEscape(g.repo) + "/statuses/" + s.Commit
	body := giteaStatus{State: string(s.State), Description: clip(s.Description, giteaDescriptionMax), Context: s.Context}
	return g.post(ctx, s.Commit, u, body, func(req *http.Request) {
		req.Header.Set("Authorization", "token "+g.creds.Token)
	})
}
