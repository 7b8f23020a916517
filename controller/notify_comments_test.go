package controller_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// prToken is the GitHub token of the tenant's Secret, which no comment
// or event may quote.
const prToken = "ghp-tenant-token-s3cr3t"

// prComment is one comment the stand-in GitHub got.
type prComment struct {
	number int
	auth   string
	body   string
}

// gitHubAPI stands in for GitHub's REST API on loopback for one
// repository: the pull requests holding a commit are those prs says, and
// each comment posted goes to comments; lookups gets each commit looked
// up.
type gitHubAPI struct {
	*httptest.Server
	mu       sync.Mutex
	prs      map[string][]int
	comments chan prComment
	lookups  chan string
}

var (
	pullsPath   = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/commits/([0-9a-f]{40})/pulls$`)
	commentPath = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/([0-9]+)/comments$`)
)

func newGitHubAPI(t *testing.T, owner, repo string) *gitHubAPI {
	t.Helper()
	g := &gitHubAPI{prs: map[string][]int{}, comments: make(chan prComment, 16), lookups: make(chan string, 16)}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+prToken {
			http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
			return
		}
		if m := pullsPath.FindStringSubmatch(r.URL.Path); m != nil && r.Method == http.MethodGet && m[1] == owner && m[2] == repo {
			g.mu.Lock()
			numbers := g.prs[m[3]]
			g.mu.Unlock()
			list := []map[string]any{}
			for _, n := range numbers {
				list = append(list, map[string]any{"number": n, "state": "open"})
			}
			g.lookups <- m[3]
			_ = json.NewEncoder(w).Encode(list)
			return
		}
		if m := commentPath.FindStringSubmatch(r.URL.Path); m != nil && r.Method == http.MethodPost && m[1] == owner && m[2] == repo {
			var body struct {
				Body string `json:"body"`
			}
			data, _ := io.ReadAll(r.Body)
			if err := json.Unmarshal(data, &body); err != nil {
				http.Error(w, `{"message":"Problems parsing JSON"}`, http.StatusBadRequest)
				return
			}
			n, _ := strconv.Atoi(m[3])
			g.comments <- prComment{number: n, auth: r.Header.Get("Authorization"), body: body.Body}
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":1}`)
			return
		}
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
	}))
	t.Cleanup(g.Close)
	return g
}

// holds says commit is in pull requests numbers.
func (g *gitHubAPI) holds(commit string, numbers ...int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.prs[commit] = numbers
}

func (g *gitHubAPI) nextComment(t *testing.T) prComment {
	t.Helper()
	select {
	case c := <-g.comments:
		return c
	case <-time.After(60 * time.Second):
		t.Fatal("no pull request comment arrived")
	}
	return prComment{}
}

func (g *gitHubAPI) nextLookup(t *testing.T) string {
	t.Helper()
	select {
	case c := <-g.lookups:
		return c
	case <-time.After(60 * time.Second):
		t.Fatal("no pull request lookup arrived")
	}
	return ""
}

// TestPullRequestComments: a GitSync with a github notification comments
// on the pull request holding each commit it applies, listing what the
// sync changed: the first commit's created ConfigMaps and Secret (never
// the Secret's value, nor the token). A commit in no pull request is
// looked up and posts nothing: the next comment is the next commit's, on
// its own pull request, listing the ConfigMap it pruned.
//
// Checked by listing no pruned entries in changesOf: the second comment
// then lacks the pruned line.
func TestPullRequestComments(t *testing.T) {
	const secretValue = "db-password-in-git-77"
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	rp := newRepo(t)
	// The repository's owner and name, as the file:// URL names them.
	owner, repo := filepath.Base(filepath.Dir(rp.dir)), filepath.Base(rp.dir)
	api := newGitHubAPI(t, owner, repo)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "notify-github", Namespace: ns},
		Data: map[string][]byte{"token": []byte(prToken), "address": []byte(api.URL)}}
	if err := c.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	secretYAML := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: " + secretValue + "\n"
	c1 := rp.commit(map[string]string{"deploy/a.yaml": configMap("a", "1"), "deploy/b.yaml": configMap("b", "1"), "deploy/db.yaml": secretYAML})
	api.holds(c1, 42)
	gs := newGitSync(ns, "app", rp.url(), withNotifications(notifyTo("github")))
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	first := api.nextComment(t)
	if first.number != 42 || first.auth != "Bearer "+prToken {
		t.Errorf("comment on #%d with %q, want #42 with the Secret's token", first.number, first.auth)
	}
	for _, want := range []string{ns + "/app is Ready", c1, "```diff", "+ created ConfigMap/" + ns + "/a", "+ created ConfigMap/" + ns + "/b", "+ created Secret/" + ns + "/db"} {
		if !strings.Contains(first.body, want) {
			t.Errorf("first comment lacks %q:\n%s", want, first.body)
		}
	}
	if strings.Contains(first.body, secretValue) || strings.Contains(first.body, prToken) {
		t.Errorf("first comment quotes a Secret value or the token:\n%s", first.body)
	}

	// A commit in no pull request: looked up, nothing posted.
	if got := api.nextLookup(t); got != c1 {
		t.Fatalf("looked up %s, want %s", got, c1)
	}
	c2 := rp.commit(map[string]string{"deploy/a.yaml": configMap("a", "2")})
	request(t, c, key, "c2")
	if got := api.nextLookup(t); got != c2 {
		t.Fatalf("looked up %s, want %s", got, c2)
	}

	// The next comment is the next commit's: the pruned ConfigMap, on its
	// own pull request. (Three sends: the destination's burst.)
	c3 := rp.commit(map[string]string{"deploy/b.yaml": ""})
	api.holds(c3, 43)
	request(t, c, key, "c3")
	second := api.nextComment(t)
	if second.number != 43 || !strings.Contains(second.body, c3) || !strings.Contains(second.body, "- pruned ConfigMap/"+ns+"/b") {
		t.Errorf("second comment on #%d, want #43 naming %s and the pruned ConfigMap/%s/b:\n%s", second.number, c3, ns, second.body)
	}
	if strings.Contains(second.body, "ConfigMap/"+ns+"/a") {
		t.Errorf("second comment lists the unchanged ConfigMap a:\n%s", second.body)
	}
}

// TestPullRequestCommentRefused: a token the host refuses does not keep
// the GitSync from becoming Ready; a Warning event names the Secret and
// the HTTP status, never the token.
//
// Checked by making postComments return nil on a refused comment: no
// event then names HTTP 401.
func TestPullRequestCommentRefused(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	rp := newRepo(t)
	api := newGitHubAPI(t, filepath.Base(filepath.Dir(rp.dir)), filepath.Base(rp.dir))
	wrong := "wrong-" + prToken
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "notify-github", Namespace: ns},
		Data: map[string][]byte{"token": []byte(wrong), "address": []byte(api.URL)}}
	if err := c.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	rp.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
	gs := newGitSync(ns, "app", rp.url(), withNotifications(notifyTo("github")))
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, client.ObjectKeyFromObject(gs), v1.ConditionReady, metav1.ConditionTrue, nil)
	waitNotificationEvent(t, c, ns, "HTTP 401") // also fails on an event quoting "s3cr3t"
	if len(api.comments) != 0 {
		t.Error("a comment was posted with a refused token")
	}
}

// gitLabNote is one note the stand-in GitLab got.
type gitLabNote struct {
	path, token, body string
}

// TestMergeRequestComments: a GitSync with a gitlab notification comments
// on the merge request GitLab lists for the applied commit, through the
// project's full path (URL-encoded as one segment), with PRIVATE-TOKEN.
//
// Checked by sending the token as a Bearer Authorization header: the
// stand-in then refuses the lookup and no note arrives.
func TestMergeRequestComments(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	rp := newRepo(t)
	project := strings.TrimPrefix(rp.dir, "/") // file:///a/b/c names project a/b/c
	var commit string
	var mu sync.Mutex
	notes := make(chan gitLabNote, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("PRIVATE-TOKEN") != prToken {
			http.Error(w, `{"message":"401 Unauthorized"}`, http.StatusUnauthorized)
			return
		}
		prefix := "/projects/" + strings.ReplaceAll(project, "/", "%2F")
		mu.Lock()
		want := commit
		mu.Unlock()
		switch p := r.URL.EscapedPath(); {
		case r.Method == http.MethodGet && p == prefix+"/repository/commits/"+want+"/merge_requests":
			_, _ = io.WriteString(w, `[{"id":900,"iid":5,"state":"merged"}]`)
		case r.Method == http.MethodPost && p == prefix+"/merge_requests/5/notes":
			var body struct {
				Body string `json:"body"`
			}
			data, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(data, &body)
			notes <- gitLabNote{path: p, token: r.Header.Get("PRIVATE-TOKEN"), body: body.Body}
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":1}`)
		default:
			http.Error(w, `{"message":"404 Not Found"}`, http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "notify-gitlab", Namespace: ns},
		Data: map[string][]byte{"token": []byte(prToken), "address": []byte(srv.URL)}}
	if err := c.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	c1 := rp.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
	mu.Lock()
	commit = c1
	mu.Unlock()
	gs := newGitSync(ns, "app", rp.url(), withNotifications(notifyTo("gitlab")))
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-notes:
		if !strings.Contains(n.body, "+ created ConfigMap/"+ns+"/a") || !strings.Contains(n.body, c1) {
			t.Errorf("note on %s:\n%s\nwant the created ConfigMap a and %s", n.path, n.body, c1)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no merge request note arrived")
	}
}
