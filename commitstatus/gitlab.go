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
	project, err := gitlabProject(r)
	if err != nil {
		return nil, err
	}
	if err := h.creds.needToken(h.provider); err != nil {
		return nil, err
	}
	return &gitlab{host: h, project: project}, nil
}

// gitlabProject is r's project as GitLab's API names it: its whole path
// (subgroups included) as one URL segment, its slashes %2F.
func gitlabProject(r Repository) (string, error) {
	if !strings.Contains(r.Path, "/") {
		return "", errors.New("repository path " + r.Path + " is not GROUP/PROJECT")
	}
	return url.PathEscape(r.Path), nil
}

// gitlabAuth sends a GitLab token.
func gitlabAuth(req *http.Request, token string) { req.Header.Set("PRIVATE-TOKEN", token) }

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
	err := g.post(ctx, s.Commit, u, body, func(req *http.Request) { gitlabAuth(req, g.creds.Token) })
	// GitLab refuses to set the state a status already has ("Cannot
	// transition status via :run from :running"): the commit shows what we
	// meant, which is what a repeat after a restart wants.
	var pe *PostError
	if errors.As(err, &pe) && pe.Code == http.StatusBadRequest && strings.Contains(pe.Message, "Cannot transition status") {
		return nil
	}
	return err
}
