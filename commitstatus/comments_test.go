package commitstatus

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// commentHost is a GitHub or GitLab API on loopback: it answers the
// lookup of sha's requests with list, and records every request.
type commentHost struct {
	*httptest.Server
	recorder
	list string
	// postCode answers the comment posts; 0 is 201.
	postCode int
}

func newCommentHost(t *testing.T, list string) *commentHost {
	t.Helper()
	h := &commentHost{list: list}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.record(r)
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, h.list)
			return
		}
		code := h.postCode
		if code == 0 {
			code = http.StatusCreated
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, `{"message":"echo `+r.Header.Get("PRIVATE-TOKEN")+`"}`)
	}))
	t.Cleanup(h.Close)
	return h
}

// call is the part of a request a test compares.
type call struct{ Method, Path, Auth, Body string }

func callsOf(rs []request, authHeader string) []call {
	var out []call
	for _, r := range rs {
		body, _ := r.Body["body"].(string)
		out = append(out, call{r.Method, r.Path, r.Header.Get(authHeader), body})
	}
	return out
}

// TestCommentRequestShape: per host, the lookup of the commit's pull or
// merge requests, then one comment on each (a number listed twice gets
// one), with the host's auth header; a commit in no request posts nothing.
func TestCommentRequestShape(t *testing.T) {
	const body = "+ created ConfigMap/ns/a"
	tests := []struct {
		name, provider, repoURL, list, authHeader string
		want                                      []call
		numbers                                   []int
	}{
		{name: "github", provider: "github", repoURL: "https://github.com/acme/app.git", authHeader: "Authorization",
			list: `[{"number":7,"state":"open"},{"number":9},{"number":7}]`, numbers: []int{7, 9},
			want: []call{
				{"GET", "/repos/acme/app/commits/" + sha + "/pulls", "Bearer " + token, ""},
				{"POST", "/repos/acme/app/issues/7/comments", "Bearer " + token, body},
				{"POST", "/repos/acme/app/issues/9/comments", "Bearer " + token, body},
			}},
		{name: "github no pull request", provider: "github", repoURL: "git@github.com:acme/app.git", authHeader: "Authorization",
			list: `[]`, want: []call{{"GET", "/repos/acme/app/commits/" + sha + "/pulls", "Bearer " + token, ""}}},
		{name: "gitlab subgroup", provider: "gitlab", repoURL: "https://gitlab.example.com/grp/sub/app.git", authHeader: "PRIVATE-TOKEN",
			list: `[{"iid":3,"id":1234}]`, numbers: []int{3},
			want: []call{
				{"GET", "/projects/grp%2Fsub%2Fapp/repository/commits/" + sha + "/merge_requests", token, ""},
				{"POST", "/projects/grp%2Fsub%2Fapp/merge_requests/3/notes", token, body},
			}},
		{name: "gitlab no merge request", provider: "gitlab", repoURL: "https://gitlab.example.com/grp/app", authHeader: "PRIVATE-TOKEN",
			list: `[]`, want: []call{{"GET", "/projects/grp%2Fapp/repository/commits/" + sha + "/merge_requests", token, ""}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newCommentHost(t, tc.list)
			c, err := NewCommenter(Options{Provider: tc.provider, RepoURL: tc.repoURL, Address: h.URL,
				Credentials: Credentials{Token: token}, Client: plainClient()})
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Comment(context.Background(), sha, body)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.numbers, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("numbers commented on (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, callsOf(h.requests(), tc.authHeader)); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCommentRefused: a post the host refuses is a *PostError with the
// code, naming the request, never quoting the token the host echoed.
func TestCommentRefused(t *testing.T) {
	h := newCommentHost(t, `[{"iid":5}]`)
	h.postCode = http.StatusForbidden
	c, err := NewCommenter(Options{Provider: "gitlab", RepoURL: "https://gitlab.example.com/grp/app", Address: h.URL,
		Credentials: Credentials{Token: token}, Client: plainClient()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Comment(context.Background(), sha, "x")
	pe, ok := errors.AsType[*PostError](err)
	if !ok || pe.Code != http.StatusForbidden || !strings.Contains(err.Error(), "merge request comment on #5") {
		t.Fatalf("error %v, want a 403 PostError naming the merge request", err)
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("error quotes the token: %v", err)
	}
}

// TestCommentClipped: a body past MaxCommentBytes is cut to it.
func TestCommentClipped(t *testing.T) {
	h := newCommentHost(t, `[{"number":1}]`)
	c, err := NewCommenter(Options{Provider: "github", RepoURL: "https://github.com/acme/app", Address: h.URL,
		Credentials: Credentials{Token: token}, Client: plainClient()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Comment(context.Background(), sha, strings.Repeat("y", 2*MaxCommentBytes)); err != nil {
		t.Fatal(err)
	}
	rs := h.requests()
	if got := len(rs[len(rs)-1].Body["body"].(string)); got > MaxCommentBytes {
		t.Errorf("body of %d bytes posted, want at most %d", got, MaxCommentBytes)
	}
}

// TestCommenterRefusesBadInput: an unknown provider, no token, a path
// GitLab cannot address, and a commit that is not a full SHA.
func TestCommenterRefusesBadInput(t *testing.T) {
	for _, o := range []Options{
		{Provider: "gitea", RepoURL: "https://h/a/b", Credentials: Credentials{Token: token}, Client: plainClient()},
		{Provider: "github", RepoURL: "https://github.com/a/b", Client: plainClient()},
		{Provider: "gitlab", RepoURL: "https://gitlab.com/solo", Credentials: Credentials{Token: token}, Client: plainClient()},
	} {
		if _, err := NewCommenter(o); err == nil {
			t.Errorf("NewCommenter(%s %s) succeeded", o.Provider, o.RepoURL)
		}
	}
	c, err := NewCommenter(Options{Provider: "github", RepoURL: "https://github.com/a/b", Credentials: Credentials{Token: token}, Client: plainClient()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Comment(context.Background(), "main", "x"); err == nil {
		t.Error("a comment for commit \"main\" was attempted")
	}
}
