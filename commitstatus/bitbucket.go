package commitstatus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"

	"gitsync.dev/gitsync/internal/clip"
)

// bitbucket posts to Bitbucket Cloud's POST
// /repositories/{workspace}/{repo}/commit/{sha}/statuses/build, with basic
// authentication (username and app password) or a Bearer access token.
type bitbucket struct {
	*host
	workspace, repo string
	// web is where the status links to (Bitbucket requires a URL): the
	// commit's page on the host the source URL names.
	web string
}

var _ Poster = (*bitbucket)(nil)

const (
	// bitbucketKeyMax is Bitbucket's limit on a status key; a longer
	// context is hashed into one.
	bitbucketKeyMax = 40
	// bitbucketDescriptionMax keeps descriptions short in Bitbucket's UI.
	bitbucketDescriptionMax = 255
)

func newBitbucket(h *host, r Repository) (Poster, error) {
	ws, repo, err := r.ownerRepo()
	if err != nil {
		return nil, err
	}
	c := h.creds
	if c.Token == "" && (c.Username == "" || c.Password == "") {
		return nil, errors.New("bitbucket credentials missing: the Secret needs token, or username and password (an app password)")
	}
	web := h.base
	if r.Host != "" {
		web = "https://" + r.Host
	}
	web += "/" + url.PathEscape(ws) + "/" + url.PathEscape(repo) + "/commits/"
	return &bitbucket{host: h, workspace: ws, repo: repo, web: web}, nil
}

type bitbucketStatus struct {
	Key         string `json:"key"`
	State       string `json:"state"` // INPROGRESS, SUCCESSFUL, FAILED, STOPPED
	Name        string `json:"name"`
	Description string `json:"description"`
	URL         string `json:"url"`
}

var bitbucketStates = map[State]string{Pending: "INPROGRESS", Success: "SUCCESSFUL", Failure: "FAILED"}

func (b *bitbucket) Post(ctx context.Context, s Status) error {
	if err := checkCommit(b.provider, s.Commit); err != nil {
		return err
	}
	u := b.base + "/repositories/" + url.PathEscape(b.workspace) + "/" + url.PathEscape(b.repo) + "/commit/" + s.Commit + "/statuses/build"
	body := bitbucketStatus{Key: bitbucketKey(s.Context), State: bitbucketStates[s.State], Name: s.Context,
		Description: clip.To(s.Description, bitbucketDescriptionMax), URL: b.web + s.Commit}
	return b.post(ctx, s.Commit, u, body, func(req *http.Request) {
		if b.creds.Username != "" && b.creds.Password != "" {
			req.SetBasicAuth(b.creds.Username, b.creds.Password)
			return
		}
		req.Header.Set("Authorization", "Bearer "+b.creds.Token)
	})
}

// bitbucketKey is context when it fits Bitbucket's key limit, else a stable
// hash of it (the readable context is still the status's name).
func bitbucketKey(context string) string {
	if len(context) <= bitbucketKeyMax {
		return context
	}
	sum := sha256.Sum256([]byte(context))
	return hex.EncodeToString(sum[:])[:bitbucketKeyMax]
}
