package webhook

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	clocktesting "k8s.io/utils/clock/testing"

	"gitsync.dev/gitsync/source/git"
)

// fuzzWebhook drives one provider's parser and the full handler with a
// fuzzed body and signature. Properties: no panic; the status is one the
// receiver documents; nothing is enqueued unless the signature is the real
// one; a correctly signed, parseable push is never refused; only keys of
// the payload's own repository are enqueued.
func fuzzWebhook(f *testing.F, path string, p webhookProvider, fixture string, headers func(body []byte, sig string) http.Header,
	sign func(body []byte) string) {
	f.Helper()
	seed, err := os.ReadFile("testdata/webhook/" + fixture)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed, "", true)
	f.Add(seed, "sha256=00", false)
	f.Add([]byte(`{"repository":null}`), "", true)
	f.Add([]byte(`[]`), "x", false)
	f.Add([]byte(`{"push":{"changes":[{"new":null,"old":null}]},"repository":{}}`), "", true)
	f.Add([]byte(`{"changes":[{}],"repository":{"links":{"clone":[{"href":""}]}}}`), "", true)
	f.Fuzz(func(t *testing.T, body []byte, sig string, signIt bool) {
		ev, perr := p.Parse(body)
		if perr == nil && len(ev.RepoURLs) == 0 {
			t.Fatalf("Parse accepted a push without a repository URL")
		}
		correct := sign(body)
		if signIt {
			sig = correct
		}
		opts := DefaultOptions()
		opts.Clock = clocktesting.NewFakePassiveClock(testNow)
		opts.Lookup = func(_ context.Context, url string) []Target {
			return []Target{{Key: url, Secret: testSecret}}
		}
		var enqueued []string
		opts.Enqueue = func(k string) { enqueued = append(enqueued, k) }
		rcv, err := NewReceiver(opts)
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		for k, v := range headers(body, sig) {
			req.Header[k] = v
		}
		rec := httptest.NewRecorder()
		rcv.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 202, 400, 413:
		default:
			t.Fatalf("status %d is not one the receiver documents", rec.Code)
		}
		if len(enqueued) > 0 && !p.Verify(req.Header, body, testSecret) {
			t.Fatalf("enqueued %v for a request whose signature does not verify", enqueued)
		}
		if signIt && perr == nil && rec.Code != http.StatusAccepted && p.Classify(req.Header) == eventPush {
			t.Fatalf("a correctly signed push was answered %d", rec.Code)
		}
		var own []string
		for _, u := range ev.RepoURLs {
			own = append(own, git.NormalizeRepoURL(u))
		}
		for _, k := range enqueued {
			if !slices.Contains(own, k) {
				t.Fatalf("enqueued %q, not a URL of the payload's repository %v", k, own)
			}
		}
	})
}

func hubSignature(body []byte) string { return signHexHMAC("sha256=", body, testSecret) }

func FuzzWebhookGitHub(f *testing.F) {
	fuzzWebhook(f, "/hook/github", githubProvider{}, "github-push.json",
		func(_ []byte, sig string) http.Header {
			return http.Header{"X-Github-Event": {"push"}, "X-Hub-Signature-256": {sig}}
		}, hubSignature)
}

func FuzzWebhookGitLab(f *testing.F) {
	fuzzWebhook(f, "/hook/gitlab", gitlabProvider{}, "gitlab-push.json",
		func(_ []byte, sig string) http.Header {
			return http.Header{"X-Gitlab-Event": {"Push Hook"}, "X-Gitlab-Token": {sig}}
		}, func([]byte) string { return string(testSecret) })
}

func FuzzWebhookBitbucketCloud(f *testing.F) {
	fuzzWebhook(f, "/hook/bitbucket", bitbucketCloudProvider{}, "bitbucket-cloud-push.json",
		func(_ []byte, sig string) http.Header {
			return http.Header{"X-Event-Key": {"repo:push"}, "X-Hub-Signature": {sig}}
		}, hubSignature)
}

func FuzzWebhookBitbucketServer(f *testing.F) {
	fuzzWebhook(f, "/hook/bitbucket-server", bitbucketServerProvider{}, "bitbucket-server-push.json",
		func(_ []byte, sig string) http.Header {
			return http.Header{"X-Event-Key": {"repo:refs_changed"}, "X-Hub-Signature": {sig}}
		}, hubSignature)
}

func FuzzWebhookGitea(f *testing.F) {
	fuzzWebhook(f, "/hook/gitea", giteaProvider{}, "gitea-push.json",
		func(_ []byte, sig string) http.Header {
			return http.Header{"X-Gitea-Event": {"push"}, "X-Gitea-Signature": {sig}}
		}, func(body []byte) string { return signHexHMAC("", body, testSecret) })
}

func FuzzWebhookGeneric(f *testing.F) {
	ts := strconv.FormatInt(testNow.Unix(), 10)
	g := genericProvider{clock: clocktesting.NewFakePassiveClock(testNow), window: DefaultOptions().ReplayWindow}
	fuzzWebhook(f, "/hook/generic", g, "generic.json",
		func(_ []byte, sig string) http.Header {
			return http.Header{"X-Timestamp": {ts}, "X-Signature": {sig}}
		}, func(body []byte) string { return signHexHMAC("sha256=", genericSignedMessage(ts, body), testSecret) })
}

// FuzzVerifyHexHMAC: only the exact HMAC verifies, and it always does.
func FuzzVerifyHexHMAC(f *testing.F) {
	f.Add("sha256=", "sha256=00", []byte("body"), []byte("secret"))
	f.Add("", "", []byte{}, []byte{})
	f.Add("sha256=", "sha256="+strings.Repeat("a", 64), []byte("x"), []byte("k"))
	f.Fuzz(func(t *testing.T, prefix, header string, msg, secret []byte) {
		want := signHexHMAC(prefix, msg, secret)
		if len(secret) > 0 && !verifyHexHMAC(want, prefix, msg, secret) {
			t.Fatalf("the real signature %q does not verify", want)
		}
		if verifyHexHMAC(header, prefix, msg, secret) {
			if len(secret) == 0 {
				t.Fatal("an empty secret verified")
			}
			if !strings.EqualFold(strings.TrimSpace(header[len(prefix):]), want[len(prefix):]) {
				t.Fatalf("header %q verified but the signature is %q", header, want)
			}
		}
		if equalToken(header, secret) && header != string(secret) {
			t.Fatalf("token %q matched a different secret", header)
		}
	})
}
