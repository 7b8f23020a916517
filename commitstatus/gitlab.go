package commitstatus

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"gitsync.dev/gitsync/internal/clip"
)

// gitlab posts to POST /projects/{url-encoded path}/statuses/{sha} with the
// PRIVATE-TOKEN header. Subgroups are part of the path.
type gitlab struct {
	*host
	project string // the path as one URL segment: its slashes are %2F
}

var _ Poster = (*gitlab)(nil)

// gitlabDescriptionMax keeps descriptions to what GitLab stores.
const gitlabDescriptionMax = 255

func newGitLab(h *host, r Repository) (Poster, error) {
	if !strings.Contains(r.Path, "/") {
		return nil, errors.New("repository path " + r.Path + " is not GROUP/PROJECT")
	}
	if err := h.creds.needToken(h.provider); err != nil {
		return nil, err
	}
	return &gitlab{host: h, project: url.PathEscape(r.Path)}, nil
}

type gitlabStatus struct {
	State       string `json:"state"` // pending, running, success, failed, canceled
	Name        string `json:"name"`
	Description string `json:"description"`
}

// gitlabStates maps gitsync's states: a revision being applied is running.
var gitlabStates = map[State]string{Pending: "running", Success: "success", Failure: "failed"}

func (g *gitlab) Post(ctx context.Context, s Status) error {
	if err := checkCommit(g.provider, s.Commit); err != nil {
		return err
	}
	u := g.base + "/projects/" + g.project + "/statuses/" + s.Commit
	body := gitlabStatus{State: gitlabStates[s.State], Name: s.Context, Description: clip.To(s.Description, gitlabDescriptionMax)}
	err := g.post(ctx, s.Commit, u, body, func(req *http.Request) {
		req.Header.Set("PRIVATE-TOKEN", g.creds.Token)
	})
	// GitLab refuses to set the state a status already has ("Cannot
	// transition status via :run from :running"): the commit shows what we
	// meant, which is what a repeat after a restart wants.
	var pe *PostError
	if errors.As(err, &pe) && pe.Code == http.StatusBadRequest && strings.Contains(pe.Message, "Cannot transition status") {
		return nil
	}
	return err
}
