package webhook

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// giteaDeliveryHeaders are the headers Gitea (and Forgejo) send with one
// push delivery: its own, Gogs' and, for GitHub compatibility, GitHub's
// event, delivery and signature headers, all over the same body.
func giteaDeliveryHeaders(body, secret []byte, uuid string) http.Header {
	sig := signHexHMAC("", body, secret)
	return http.Header{
		"X-Gitea-Event": {"push"}, "X-Gitea-Delivery": {uuid}, "X-Gitea-Signature": {sig},
		"X-Gogs-Event": {"push"}, "X-Gogs-Delivery": {uuid}, "X-Gogs-Signature": {sig},
		"X-Github-Event": {"push"}, "X-Github-Delivery": {uuid}, "X-Hub-Signature-256": {"sha256=" + sig},
	}
}

// TestReceiverOneDeliveryAcrossEndpoints: one delivery counts once whatever
// endpoint it is posted to. A GitHub push whose body and HMAC are posted
// again to /hook/gitea (the same MAC as bare hex in X-Gitea-Signature, a
// fresh delivery ID) is a replay, and so is a Gitea delivery (which carries
// GitHub's headers too) posted again to /hook/github; a different push at
// the other endpoint is still a new delivery.
//
// Checked by putting the endpoint's name back into the replay scope (as it
// was): the second delivery of each case is then accepted and enqueued again.
func TestReceiverOneDeliveryAcrossEndpoints(t *testing.T) {
	github := readFixture(t, "github-push.json")
	github2 := bytes.Replace(github, []byte(`"refs/heads/main"`), []byte(`"refs/heads/dev"`), 1)
	gitea := readFixture(t, "gitea-push.json")
	withID := func(h http.Header, name, id string) http.Header {
		h.Set(name, id)
		return h
	}
	ghStep := func(body []byte, id string) replayStep {
		return replayStep{path: "/hook/github", headers: withID(githubHeaders("push", body, testSecret), "X-GitHub-Delivery", id), body: body}
	}
	giteaStep := func(body []byte, id string) replayStep {
		return replayStep{path: "/hook/gitea", headers: withID(giteaHeaders("push", body, testSecret), "X-Gitea-Delivery", id), body: body}
	}
	tests := []struct {
		name  string
		steps []replayStep
		want  []string
	}{
		{"GitHub delivery posted again to /hook/gitea", []replayStep{
			ghStep(github, "d-1").expect(ResultAccepted), giteaStep(github, "forged-1").expect(ResultReplayed)},
			[]string{"ns/gh-main", "ns/gh-tags"}},
		{"the same, Gitea endpoint first", []replayStep{
			giteaStep(github, "forged-1").expect(ResultAccepted), ghStep(github, "d-1").expect(ResultReplayed)},
			[]string{"ns/gh-main", "ns/gh-tags"}},
		{"Gitea delivery posted again to /hook/github", []replayStep{
			{path: "/hook/gitea", headers: giteaDeliveryHeaders(gitea, testSecret, "u-1"), body: gitea, result: ResultAccepted},
			{path: "/hook/github", headers: giteaDeliveryHeaders(gitea, testSecret, "u-1"), body: gitea, result: ResultReplayed}},
			[]string{"ns/gitea-main"}},
		{"another push at the other endpoint is new", []replayStep{
			ghStep(github, "d-1").expect(ResultAccepted), giteaStep(github2, "g-2").expect(ResultAccepted)},
			[]string{"ns/gh-dev", "ns/gh-main", "ns/gh-tags", "ns/gh-tags"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runReplaySteps(t, tt.steps, tt.want) })
	}
}

// schemeSignatures returns, for each signature scheme the receiver knows,
// the headers that sign body with secret in that scheme.
func schemeSignatures(body, secret []byte) map[string]http.Header {
	ts := strconv.FormatInt(testNow.Unix(), 10)
	return map[string]http.Header{
		"github":    {"X-Hub-Signature-256": {signHexHMAC("sha256=", body, secret)}},
		"gitea":     {"X-Gitea-Signature": {signHexHMAC("", body, secret)}},
		"bitbucket": {"X-Hub-Signature": {signHexHMAC("sha256=", body, secret)}},
		"gitlab":    {"X-Gitlab-Token": {string(secret)}},
		"generic":   {"X-Timestamp": {ts}, "X-Signature": {signHexHMAC("sha256=", genericSignedMessage(ts, body), secret)}},
	}
}

// TestReceiverChecksOnlyItsOwnScheme: each endpoint verifies only its own
// provider's signature header and scheme. A push to it carrying a correct
// signature in any other provider's scheme (GitHub's X-Hub-Signature-256 at
// /hook/gitea, Gitea's X-Gitea-Signature at /hook/github, …), alone or all
// of them together, is a bad signature and enqueues nothing; its own scheme
// is accepted.
//
// Checked by letting giteaProvider.Verify fall back to X-Hub-Signature-256
// (which Gitea sends too): the gitea endpoint then accepts GitHub's header;
// and githubProvider.Verify to X-Gitea-Signature: the reverse.
func TestReceiverChecksOnlyItsOwnScheme(t *testing.T) {
	endpoints := []struct {
		path, scheme, fixture string
		event                 http.Header
		want                  []string
	}{
		{"/hook/github", "github", "github-push.json", http.Header{"X-Github-Event": {"push"}}, []string{"ns/gh-main", "ns/gh-tags"}},
		{"/hook/gitea", "gitea", "gitea-push.json", http.Header{"X-Gitea-Event": {"push"}}, []string{"ns/gitea-main"}},
		{"/hook/gitlab", "gitlab", "gitlab-push.json", http.Header{"X-Gitlab-Event": {"Push Hook"}}, []string{"ns/gl-main"}},
		{"/hook/bitbucket", "bitbucket", "bitbucket-cloud-push.json", http.Header{"X-Event-Key": {"repo:push"}}, []string{"ns/bbc-main"}},
		{"/hook/bitbucket-server", "bitbucket", "bitbucket-server-push.json", http.Header{"X-Event-Key": {"repo:refs_changed"}},
			[]string{"ns/bbs-main"}},
		{"/hook/generic", "generic", "generic.json", http.Header{}, []string{"ns/generic-any", "ns/generic-main"}},
	}
	for _, ep := range endpoints {
		body := readFixture(t, ep.fixture)
		sigs := schemeSignatures(body, testSecret)
		allForeign := ep.event.Clone()
		for scheme, sig := range sigs {
			if scheme == ep.scheme {
				continue
			}
			for k, v := range sig {
				allForeign[k] = v
			}
			t.Run(ep.path+" refuses "+scheme, func(t *testing.T) {
				expectDelivery(t, ep.path, merge(ep.event, sig), body, ResultBadSignature, nil)
			})
		}
		t.Run(ep.path+" refuses every other scheme at once", func(t *testing.T) {
			expectDelivery(t, ep.path, allForeign, body, ResultBadSignature, nil)
		})
		t.Run(ep.path+" accepts its own", func(t *testing.T) {
			expectDelivery(t, ep.path, merge(ep.event, sigs[ep.scheme]), body, ResultAccepted, ep.want)
		})
	}
}

// merge returns the union of headers, later ones winning.
func merge(hs ...http.Header) http.Header {
	out := http.Header{}
	for _, h := range hs {
		for k, v := range h {
			out[k] = v
		}
	}
	return out
}

// expectDelivery posts one delivery to a fresh receiver and checks what was
// observed and enqueued.
func expectDelivery(t *testing.T, path string, h http.Header, body []byte, result Result, keys []string) {
	t.Helper()
	rec, obs := &recorder{}, &observed{}
	srv := newTestReceiver(t, rec.Enqueue, obs.Observe)
	if status, _ := post(t, srv.URL+path, h, bytes.NewReader(body)); status != http.StatusAccepted {
		t.Errorf("status %d, want 202", status)
	}
	var got []Result
	for _, d := range obs.All() {
		got = append(got, d.Result)
	}
	if diff := cmp.Diff([]Result{result}, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(keys, rec.Keys()); diff != "" {
		t.Errorf("enqueued (-want +got):\n%s", diff)
	}
}
