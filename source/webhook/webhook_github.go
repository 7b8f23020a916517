package webhook

import "net/http"

// githubProvider speaks GitHub's webhooks: X-GitHub-Event names the event,
// X-Hub-Signature-256 is "sha256=" + hex HMAC-SHA256 of the body.
type githubProvider struct{}

var _ webhookProvider = githubProvider{}

func (githubProvider) Classify(h http.Header) eventKind {
	switch h.Get("X-GitHub-Event") {
	case "push":
		return eventPush
	case "ping":
		return eventPing
	case "":
		return eventMalformed
	}
	return eventOther
}

func (githubProvider) Delivery(h http.Header, body []byte) []string {
	return deliveryKeys(h.Get("X-GitHub-Delivery"), body)
}

func (githubProvider) Verify(h http.Header, body, secret []byte) bool {
	return verifyHexHMAC(h.Get("X-Hub-Signature-256"), "sha256=", body, secret)
}

func (githubProvider) Parse(body []byte) (pushEvent, error) { return parseGitHubStylePush(body) }

// githubStylePush is the part of a GitHub (and Gitea, Forgejo, Gogs) push
// payload we read.
type githubStylePush struct {
	Ref        string `json:"ref"`
	Repository *struct {
		HTMLURL  string `json:"html_url"`
		CloneURL string `json:"clone_url"`
		SSHURL   string `json:"ssh_url"`
		GitURL   string `json:"git_url"`
		URL      string `json:"url"`
	} `json:"repository"`
}

func parseGitHubStylePush(body []byte) (pushEvent, error) {
	var p githubStylePush
	if err := decodePayload(body, &p); err != nil {
		return pushEvent{}, err
	}
	if p.Repository == nil || p.Ref == "" {
		return pushEvent{}, errMalformed
	}
	r := p.Repository
	urls := nonEmpty(r.CloneURL, r.HTMLURL, r.SSHURL, r.GitURL, r.URL)
	if len(urls) == 0 {
		return pushEvent{}, errMalformed
	}
	return pushEvent{RepoURLs: urls, Refs: []string{p.Ref}}, nil
}
