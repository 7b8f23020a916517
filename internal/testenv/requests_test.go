package testenv

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRequestCounterClassifies: each request lands in exactly one of
// watches, reads and writes, dry runs are found in the query and in a
// DELETE's body, and the body still reaches the server whole.
func TestRequestCounterClassifies(t *testing.T) {
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
	}))
	defer srv.Close()
	var c RequestCounter
	client := &http.Client{Transport: c.WrapTransport(http.DefaultTransport)}
	send := func(method, path, body string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	send(http.MethodGet, "/api/v1/configmaps?watch=true", "")
	send(http.MethodGet, "/api/v1/namespaces/a/configmaps/x", "")
	send(http.MethodPatch, "/api/v1/namespaces/a/configmaps/x?dryRun=All&fieldManager=gitsync", "{}")
	send(http.MethodPatch, "/api/v1/namespaces/a/configmaps/x?fieldManager=gitsync", "{}")
	send(http.MethodDelete, "/api/v1/namespaces/a/configmaps/x", `{"dryRun":["All"]}`)
	send(http.MethodDelete, "/api/v1/namespaces/a/configmaps/y", `{"preconditions":{"uid":"u"}}`)

	got := map[string]int64{"all": c.All.Load(), "watches": c.Watches.Load(), "reads": c.Reads.Load(),
		"writes": c.Writes.Load(), "dryRuns": c.DryRuns.Load(), "mutating": c.Mutating()}
	want := map[string]int64{"all": 6, "watches": 1, "reads": 1, "writes": 4, "dryRuns": 2, "mutating": 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if bodies[4] != `{"dryRun":["All"]}` {
		t.Errorf("the dry-run DELETE reached the server with body %q", bodies[4])
	}
	wantLog := []string{
		"GET /api/v1/configmaps?watch=true",
		"GET /api/v1/namespaces/a/configmaps/x",
		"PATCH /api/v1/namespaces/a/configmaps/x?dryRun=All&fieldManager=gitsync",
		"PATCH /api/v1/namespaces/a/configmaps/x?fieldManager=gitsync",
		"DELETE /api/v1/namespaces/a/configmaps/x",
		"DELETE /api/v1/namespaces/a/configmaps/y",
	}
	if diff := cmp.Diff(wantLog, strings.Split(JoinRequests(c.Requests()), "\n")); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	c.Reset()
	if c.All.Load() != 0 || c.Writes.Load() != 0 || len(c.Requests()) != 0 {
		t.Errorf("after Reset: %d requests, %d writes, log %v", c.All.Load(), c.Writes.Load(), c.Requests())
	}
}
