package webhook

import "net/http"

// maxRefsPerEvent bounds how many refs one payload may name; a push of more
// branches than this is still a push, matched on the first ones.
const maxRefsPerEvent = 100

// bitbucketCloudProvider speaks Bitbucket Cloud's webhooks: X-Event-Key
// "repo:push", X-Hub-Signature "sha256=" + hex HMAC-SHA256 of the body (sent
// when the webhook has a secret, which we require).
type bitbucketCloudProvider struct{}

var _ webhookProvider = bitbucketCloudProvider{}

func (bitbucketCloudProvider) Classify(h http.Header) eventKind {
	switch h.Get("X-Event-Key") {
	case "repo:push":
		return eventPush
	case "":
		return eventMalformed
	}
	return eventOther
}

func (bitbucketCloudProvider) Delivery(h http.Header, body []byte) []string {
	return deliveryKeys(h.Get("X-Request-UUID"), body)
}

func (bitbucketCloudProvider) Verify(h http.Header, body, secret []byte) bool {
	return verifyHexHMAC(h.Get("X-Hub-Signature"), "sha256=", body, secret)
}

// bitbucketCloudPush is the part of a Bitbucket Cloud repo:push payload we read.
type bitbucketCloudPush struct {
	Repository *struct {
		FullName string `json:"full_name"`
		Links    struct {
			HTML struct {
				Href string `json:"href"`
			} `json:"html"`
		} `json:"links"`
	} `json:"repository"`
	Push *struct {
		Changes []struct {
			New *bitbucketCloudRef `json:"new"`
			Old *bitbucketCloudRef `json:"old"`
		} `json:"changes"`
	} `json:"push"`
}

type bitbucketCloudRef struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

func (bitbucketCloudProvider) Parse(body []byte) (pushEvent, error) {
	var p bitbucketCloudPush
	if err := decodePayload(body, &p); err != nil {
		return pushEvent{}, err
	}
	if p.Repository == nil || p.Push == nil {
		return pushEvent{}, errMalformed
	}
	full := ""
	if p.Repository.FullName != "" {
		full = "https://bitbucket.org/" + p.Repository.FullName
	}
	urls := nonEmpty(p.Repository.Links.HTML.Href, full)
	if len(urls) == 0 {
		return pushEvent{}, errMalformed
	}
	ev := pushEvent{RepoURLs: urls}
	for _, c := range p.Push.Changes {
		ref := c.New
		if ref == nil { // a deleted branch or tag: only "old" is set
			ref = c.Old
		}
		if ref == nil || ref.Name == "" || len(ev.Refs) == maxRefsPerEvent {
			continue
		}
		switch ref.Type {
		case "branch", "named_branch":
			ev.Refs = append(ev.Refs, "refs/heads/"+ref.Name)
		case "tag", "annotated_tag":
			ev.Refs = append(ev.Refs, "refs/tags/"+ref.Name)
		}
	}
	if len(ev.Refs) == 0 {
		return pushEvent{}, errMalformed
	}
	return ev, nil
}

// bitbucketServerProvider speaks Bitbucket Server / Data Center webhooks:
// X-Event-Key "repo:refs_changed" (or "diagnostics:ping"), X-Hub-Signature
// "sha256=" + hex HMAC-SHA256 of the body.
type bitbucketServerProvider struct{}

var _ webhookProvider = bitbucketServerProvider{}

func (bitbucketServerProvider) Classify(h http.Header) eventKind {
	switch h.Get("X-Event-Key") {
	case "repo:refs_changed":
		return eventPush
	case "diagnostics:ping":
		return eventPing
	case "":
		return eventMalformed
	}
	return eventOther
}

func (bitbucketServerProvider) Delivery(h http.Header, body []byte) []string {
	return deliveryKeys(h.Get("X-Request-Id"), body)
}

func (bitbucketServerProvider) Verify(h http.Header, body, secret []byte) bool {
	return verifyHexHMAC(h.Get("X-Hub-Signature"), "sha256=", body, secret)
}

// bitbucketServerPush is the part of a repo:refs_changed payload we read.
type bitbucketServerPush struct {
	Repository *struct {
		Links struct {
			Clone []struct {
				Href string `json:"href"`
			} `json:"clone"`
		} `json:"links"`
	} `json:"repository"`
	Changes []struct {
		Ref struct {
			ID string `json:"id"`
		} `json:"ref"`
		RefID string `json:"refId"`
	} `json:"changes"`
}

func (bitbucketServerProvider) Parse(body []byte) (pushEvent, error) {
	var p bitbucketServerPush
	if err := decodePayload(body, &p); err != nil {
		return pushEvent{}, err
	}
	if p.Repository == nil {
		return pushEvent{}, errMalformed
	}
	var ev pushEvent
	for _, c := range p.Repository.Links.Clone {
		if c.Href != "" && len(ev.RepoURLs) < maxURLsPerEvent {
			ev.RepoURLs = append(ev.RepoURLs, c.Href)
		}
	}
	for _, c := range p.Changes {
		id := c.Ref.ID
		if id == "" {
			id = c.RefID
		}
		if id != "" && len(ev.Refs) < maxRefsPerEvent {
			ev.Refs = append(ev.Refs, id)
		}
	}
	if len(ev.RepoURLs) == 0 || len(ev.Refs) == 0 {
		return pushEvent{}, errMalformed
	}
	return ev, nil
}
