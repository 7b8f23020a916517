package commitstatus

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"gitsync.dev/gitsync/internal/clip"
)

// Commenter comments on the pull requests (GitHub) or merge requests
// (GitLab) that hold a commit.
type Commenter interface {
	// Comment posts body once on each request holding commit (at most
	// MaxRequests of them) and returns their numbers; a commit in no
	// request posts nothing and is no error. It stops at the first refused
	// post with a *PostError.
	Comment(ctx context.Context, commit, body string) ([]int, error)
}

// CommentProviders are the providers NewCommenter knows.
var CommentProviders = []string{"github", "gitlab"}

// MaxRequests bounds the requests one commit is commented on: a commit
// cherry-picked into many branches is still one short burst of posts.
const MaxRequests = 10

// MaxCommentBytes is the longest comment body posted; GitHub refuses
// bodies over 65536 characters, GitLab's limit is higher.
const MaxCommentBytes = 60000

// NewCommenter returns the Commenter for o.Provider (github or gitlab) on
// the repository o.RepoURL names, at o.Address or the API its host serves.
func NewCommenter(o Options) (Commenter, error) {
	if o.Client == nil {
		return nil, fmt.Errorf("%s comment client missing", o.Provider)
	}
	repo, err := ParseRepository(o.RepoURL)
	if err != nil {
		return nil, err
	}
	if o.Provider != "github" && o.Provider != "gitlab" {
		return nil, fmt.Errorf("comment provider %q unknown (want one of %s)", o.Provider, strings.Join(CommentProviders, ", "))
	}
	base, err := apiBase(o.Provider, repo, o.Address)
	if err != nil {
		return nil, err
	}
	h := &host{provider: o.Provider, base: base, client: o.Client, creds: o.Credentials}
	if err := h.creds.needToken(h.provider); err != nil {
		return nil, err
	}
	if o.Provider == "gitlab" {
		project, err := gitlabProject(repo)
		if err != nil {
			return nil, err
		}
		return &gitlabComments{host: h, project: project}, nil
	}
	owner, name, err := repo.ownerRepo()
	if err != nil {
		return nil, err
	}
	return &githubComments{host: h, repo: url.PathEscape(owner) + "/" + url.PathEscape(name)}, nil
}

// githubComments lists GET /repos/{owner}/{repo}/commits/{sha}/pulls and
// posts POST /repos/{owner}/{repo}/issues/{number}/comments (a pull
// request's conversation is its issue's).
type githubComments struct {
	*host
	repo string // owner/repo, each segment escaped
}

var _ Commenter = (*githubComments)(nil)

func (g *githubComments) auth(req *http.Request) { githubAuth(req, g.creds.Token) }

func (g *githubComments) Comment(ctx context.Context, commit, body string) ([]int, error) {
	if err := checkCommit(g.provider, commit); err != nil {
		return nil, err
	}
	var pulls []struct {
		Number int `json:"number"`
	}
	u := g.base + "/repos/" + g.repo + "/commits/" + commit + "/pulls?per_page=" + strconv.Itoa(MaxRequests)
	if err := g.do(ctx, "pull request lookup", http.MethodGet, commit, u, nil, g.auth, &pulls); err != nil {
		return nil, err
	}
	numbers := make([]int, 0, len(pulls))
	for _, p := range pulls {
		numbers = append(numbers, p.Number)
	}
	return g.postEach(ctx, "pull request comment", commit, numbers, func(n int) string {
		return g.base + "/repos/" + g.repo + "/issues/" + strconv.Itoa(n) + "/comments"
	}, body, g.auth)
}

// gitlabComments lists GET /projects/:id/repository/commits/:sha/merge_requests
// and posts POST /projects/:id/merge_requests/:iid/notes.
type gitlabComments struct {
	*host
	project string // the path as one URL segment: its slashes are %2F
}

var _ Commenter = (*gitlabComments)(nil)

func (g *gitlabComments) auth(req *http.Request) { gitlabAuth(req, g.creds.Token) }

func (g *gitlabComments) Comment(ctx context.Context, commit, body string) ([]int, error) {
	if err := checkCommit(g.provider, commit); err != nil {
		return nil, err
	}
	var mrs []struct {
		IID int `json:"iid"`
	}
	u := g.base + "/projects/" + g.project + "/repository/commits/" + commit + "/merge_requests?per_page=" + strconv.Itoa(MaxRequests)
	if err := g.do(ctx, "merge request lookup", http.MethodGet, commit, u, nil, g.auth, &mrs); err != nil {
		return nil, err
	}
	iids := make([]int, 0, len(mrs))
	for _, m := range mrs {
		iids = append(iids, m.IID)
	}
	return g.postEach(ctx, "merge request comment", commit, iids, func(iid int) string {
		return g.base + "/projects/" + g.project + "/merge_requests/" + strconv.Itoa(iid) + "/notes"
	}, body, g.auth)
}

// commentBody is the body GitHub's issue comments and GitLab's notes
// both take.
type commentBody struct {
	Body string `json:"body"`
}

// postEach posts body to the address at(n) of each distinct positive
// number, at most MaxRequests of them, and returns the numbers posted to.
func (h *host) postEach(ctx context.Context, what, commit string, numbers []int, at func(int) string, body string, auth func(*http.Request)) ([]int, error) {
	b := commentBody{Body: clip.To(body, MaxCommentBytes)}
	var done []int
	seen := map[int]bool{}
	for _, n := range numbers {
		if n <= 0 || seen[n] || len(done) == MaxRequests {
			continue
		}
		seen[n] = true
		if err := h.do(ctx, what+" on #"+strconv.Itoa(n), http.MethodPost, commit, at(n), b, auth, nil); err != nil {
			return done, err
		}
		done = append(done, n)
	}
	return done, nil
}
