package webhook

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// answer is everything a sender sees of a reply but its Date.
func answer(t *testing.T, url string, h http.Header, body []byte) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Header.Del("Date")
	var hs []string
	for k, v := range resp.Header {
		hs = append(hs, k+": "+strings.Join(v, ","))
	}
	slices.Sort(hs)
	return fmt.Sprintf("%d\n%s\n%s", resp.StatusCode, strings.Join(hs, "\n"), b)
}

// TestReceiverAnswersAlike: a push with a wrong signature for a repository
// the agent follows gets byte for byte the answer a push for a repository
// it does not know gets, and the answer a verified push gets, so a sender
// cannot probe which repositories are served; what happened is observed
// instead, with the keys whose secret did not verify.
//
// Checked by making dispatch return 401 for a bad signature again (as it
// did): the "wrong secret" and "no signature" answers then differ.
func TestReceiverAnswersAlike(t *testing.T) {
	github := readFixture(t, "github-push.json")
	unknown := bytes.ReplaceAll(github, []byte("org/app"), []byte("org/unknown"))
	gitlab := readFixture(t, "gitlab-push.json")
	unknownGitlab := bytes.ReplaceAll(gitlab, []byte("org/app"), []byte("org/unknown"))
	allGitHub := []string{"ns/gh-dev", "ns/gh-main", "ns/gh-other-secret", "ns/gh-tags"}
	tests := []struct {
		name     string
		path     string
		headers  http.Header
		body     []byte
		result   Result
		rejected []string
	}{
		{"verified push", "/hook/github", githubHeaders("push", github, testSecret), github, ResultAccepted, nil},
		{"wrong secret, followed repository", "/hook/github", githubHeaders("push", github, []byte("guess")), github,
			ResultBadSignature, allGitHub},
		{"no signature, followed repository", "/hook/github", http.Header{"X-Github-Event": {"push"}}, github,
			ResultBadSignature, allGitHub},
		{"wrong secret, unknown repository", "/hook/github", githubHeaders("push", unknown, []byte("guess")), unknown,
			ResultUnknownRepository, nil},
		{"no signature, unknown repository", "/hook/github", http.Header{"X-Github-Event": {"push"}}, unknown,
			ResultUnknownRepository, nil},
		{"gitlab wrong token, followed repository", "/hook/gitlab", gitlabHeaders("Push Hook", nil, []byte("guess")), gitlab,
			ResultBadSignature, []string{"ns/gl-main"}},
		{"gitlab wrong token, unknown repository", "/hook/gitlab", gitlabHeaders("Push Hook", nil, []byte("guess")), unknownGitlab,
			ResultUnknownRepository, nil},
	}
	var first string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &observed{}
			srv := newTestReceiver(t, func(string) {}, obs.Observe)
			got := answer(t, srv.URL+tt.path, tt.headers, tt.body)
			if first == "" {
				first = got
			}
			if diff := cmp.Diff(first, got); diff != "" {
				t.Errorf("answer differs from a verified push's (-verified +this):\n%s", diff)
			}
			ds := obs.All()
			if len(ds) != 1 {
				t.Fatalf("observed %d deliveries, want 1", len(ds))
			}
			slices.Sort(ds[0].Rejected)
			// Every one of them is answered 202, like a verified push, and
			// counted under that code.
			want := Delivery{Provider: strings.TrimPrefix(tt.path, "/hook/"), Result: tt.result,
				Code: http.StatusAccepted, Rejected: tt.rejected}
			if diff := cmp.Diff(want, ds[0]); diff != "" {
				t.Errorf("observed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReceiverReplays: a delivery sent again costs no second enqueue, whether
// it repeats the host's delivery ID or only the signed content under a fresh
// ID (hosts do not sign the ID); a new delivery, the same payload signed for
// other sources, or a delivery older than the memory's TTL is enqueued again.
//
// Checked by making replayMemory.firstTime always return true: every
// "replayed" step then enqueues and the test fails.
func TestReceiverReplays(t *testing.T) {
	github := readFixture(t, "github-push.json")
	github2 := bytes.Replace(github, []byte(`"refs/heads/main"`), []byte(`"refs/heads/dev"`), 1)
	gitlab := readFixture(t, "gitlab-push.json")
	generic := readFixture(t, "generic.json")
	withID := func(h http.Header, name, id string) http.Header {
		h = h.Clone()
		h.Set(name, id)
		return h
	}
	type step = replayStep
	gh := func(body []byte, id string, secret []byte) step {
		return step{path: "/hook/github", headers: withID(githubHeaders("push", body, secret), "X-GitHub-Delivery", id), body: body}
	}
	tests := []struct {
		name  string
		steps []step
		want  []string
	}{
		{"same GitHub delivery twice", []step{
			gh(github, "d-1", testSecret).expect(ResultAccepted), gh(github, "d-1", testSecret).expect(ResultReplayed)},
			[]string{"ns/gh-main", "ns/gh-tags"}},
		{"same signed content under a fresh delivery ID", []step{
			gh(github, "d-1", testSecret).expect(ResultAccepted), gh(github, "forged-2", testSecret).expect(ResultReplayed)},
			[]string{"ns/gh-main", "ns/gh-tags"}},
		{"two pushes", []step{
			gh(github, "d-1", testSecret).expect(ResultAccepted), gh(github2, "d-2", testSecret).expect(ResultAccepted)},
			[]string{"ns/gh-dev", "ns/gh-main", "ns/gh-tags", "ns/gh-tags"}},
		{"one payload from two hooks with different secrets", []step{
			gh(github, "d-1", testSecret).expect(ResultAccepted), gh(github, "d-2", []byte("another secret")).expect(ResultAccepted)},
			[]string{"ns/gh-main", "ns/gh-other-secret", "ns/gh-tags"}},
		{"a replay after the memory's TTL counts again", []step{
			gh(github, "d-1", testSecret).expect(ResultAccepted),
			{path: "/hook/github", headers: withID(githubHeaders("push", github, testSecret), "X-GitHub-Delivery", "d-1"), body: github,
				after: 11 * time.Minute, result: ResultAccepted}},
			[]string{"ns/gh-main", "ns/gh-main", "ns/gh-tags", "ns/gh-tags"}},
		{"gitlab event UUID seen before", []step{
			{path: "/hook/gitlab", headers: withID(gitlabHeaders("Push Hook", nil, testSecret), "X-Gitlab-Event-UUID", "u-1"), body: gitlab, result: ResultAccepted},
			{path: "/hook/gitlab", headers: withID(gitlabHeaders("Push Hook", nil, testSecret), "X-Gitlab-Event-UUID", "u-1"),
				body: bytes.Replace(gitlab, []byte(`"ref"`), []byte(`"ref" `), 1), result: ResultReplayed}},
			[]string{"ns/gl-main"}},
		{"generic signature sent twice", []step{
			{path: "/hook/generic", headers: genericHeaders(testNow, generic, testSecret), body: generic, result: ResultAccepted},
			{path: "/hook/generic", headers: genericHeaders(testNow, generic, testSecret), body: generic, result: ResultReplayed}},
			[]string{"ns/generic-any", "ns/generic-main"}},
		{"generic with a new timestamp is a new delivery", []step{
			{path: "/hook/generic", headers: genericHeaders(testNow, generic, testSecret), body: generic, result: ResultAccepted},
			{path: "/hook/generic", headers: genericHeaders(testNow.Add(time.Second), generic, testSecret), body: generic, result: ResultAccepted}},
			[]string{"ns/generic-any", "ns/generic-any", "ns/generic-main", "ns/generic-main"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runReplaySteps(t, tt.steps, tt.want) })
	}
}

// runReplaySteps posts steps in order to one receiver over testSources and
// checks each step's observed result and, at the end, every key enqueued.
func runReplaySteps(t *testing.T, steps []replayStep, wantKeys []string) {
	t.Helper()
	clk := clocktesting.NewFakePassiveClock(testNow)
	rec, obs := &recorder{}, &observed{}
	opts := DefaultOptions()
	opts.Lookup, opts.Enqueue, opts.Observe, opts.Clock = lookupIndex(testSources), rec.Enqueue, obs.Observe, clk
	rcv, err := NewReceiver(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	var want, got []Result
	for _, s := range steps {
		clk.SetTime(clk.Now().Add(s.after))
		if status, _ := post(t, srv.URL+s.path, s.headers, bytes.NewReader(s.body)); status != http.StatusAccepted {
			t.Errorf("status %d, want 202", status)
		}
		want = append(want, s.result)
	}
	for _, d := range obs.All() {
		got = append(got, d.Result)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantKeys, rec.Keys()); diff != "" {
		t.Errorf("enqueued (-want +got):\n%s", diff)
	}
}

// replayStep is one delivery of TestReceiverReplays.
type replayStep struct {
	path    string
	headers http.Header
	body    []byte
	// after advances the fake clock before the step.
	after  time.Duration
	result Result
}

// expect sets the result a step expects.
func (s replayStep) expect(r Result) replayStep {
	s.result = r
	return s
}
