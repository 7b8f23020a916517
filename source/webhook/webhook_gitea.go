package webhook

import "net/http"

// giteaProvider speaks Gitea's (and Forgejo's) webhooks: X-Gitea-Event names
// the event, X-Gitea-Signature is the bare hex HMAC-SHA256 of the body. The
// payload has GitHub's shape.
type giteaProvider struct{}

var _ webhookProvider = giteaProvider{}

func (giteaProvider) Classify(h http.Header) eventKind {
	switch h.Get("X-Gitea-Event") {
	case "push":
		return eventPush
	case "":
		return eventMalformed
	}
	return eventOther
}

func (giteaProvider) Delivery(h http.Header, body []byte) []string {
	return deliveryKeys(h.Get("X-Gitea-Delivery"), body)
}

func (giteaProvider) Verify(h http.Header, body, secret []byte) bool {
	return verifyHexHMAC(h.Get("X-Gitea-Signature"), "", body, secret)
}

func (giteaProvider) Parse(body []byte) (pushEvent, error) { return parseGitHubStylePush(body) }
