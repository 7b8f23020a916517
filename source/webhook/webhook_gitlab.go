package webhook

import "net/http"

// gitlabProvider speaks GitLab's webhooks: X-Gitlab-Event names the event,
// X-Gitlab-Token carries the shared secret itself (GitLab does not sign).
type gitlabProvider struct{}

var _ webhookProvider = gitlabProvider{}

func (gitlabProvider) Classify(h http.Header) eventKind {
	switch h.Get("X-Gitlab-Event") {
	case "Push Hook", "Tag Push Hook":
		return eventPush
	case "":
		return eventMalformed
	}
	return eventOther
}

func (gitlabProvider) Delivery(h http.Header, body []byte) []string {
	return deliveryKeys(h.Get("X-Gitlab-Event-UUID"), body)
}

func (gitlabProvider) Verify(h http.Header, _, secret []byte) bool {
	return equalToken(h.Get("X-Gitlab-Token"), secret)
}

// gitlabPush is the part of a GitLab push payload we read.
type gitlabPush struct {
	Ref     string `json:"ref"`
	Project *struct {
		HTTPURL string `json:"git_http_url"`
		SSHURL  string `json:"git_ssh_url"`
		WebURL  string `json:"web_url"`
	} `json:"project"`
	Repository *struct {
		HTTPURL  string `json:"git_http_url"`
		SSHURL   string `json:"git_ssh_url"`
		Homepage string `json:"homepage"`
	} `json:"repository"`
}

func (gitlabProvider) Parse(body []byte) (pushEvent, error) {
	var p gitlabPush
	if err := decodePayload(body, &p); err != nil {
		return pushEvent{}, err
	}
	var urls []string
	if p.Project != nil {
		urls = append(urls, nonEmpty(p.Project.HTTPURL, p.Project.SSHURL, p.Project.WebURL)...)
	}
	if p.Repository != nil {
		urls = append(urls, nonEmpty(p.Repository.HTTPURL, p.Repository.SSHURL, p.Repository.Homepage)...)
	}
	if len(urls) == 0 || p.Ref == "" {
		return pushEvent{}, errMalformed
	}
	return pushEvent{RepoURLs: urls, Refs: []string{p.Ref}}, nil
}
