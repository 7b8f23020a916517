package controller_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

const hostToken = "tenant-token-7"

// posted is one commit status a stand-in Gitea received.
type posted struct {
	commit, state, description, context, auth string
}

// giteaStandIn answers POST /repos/OWNER/REPO/statuses/SHA as Gitea does
// and records each status. answer, when set, replaces the 201.
type giteaStandIn struct {
	*httptest.Server
	mu     sync.Mutex
	posts  []posted
	answer func(w http.ResponseWriter, r *http.Request) bool // true: answered
}

func newGiteaStandIn(t *testing.T, answer func(w http.ResponseWriter, r *http.Request) bool) *giteaStandIn {
	t.Helper()
	return startGiteaStandIn(t, answer, false)
}

// startGiteaStandIn is newGiteaStandIn, over TLS with a certificate of its
// own CA when tls is set.
func startGiteaStandIn(t *testing.T, answer func(w http.ResponseWriter, r *http.Request) bool, tls bool) *giteaStandIn {
	t.Helper()
	s := &giteaStandIn{answer: answer}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ State, Description, Context string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		parts := strings.Split(r.URL.Path, "/")
		p := posted{commit: parts[len(parts)-1], state: body.State, description: body.Description, context: body.Context, auth: r.Header.Get("Authorization")}
		if r.Method != http.MethodPost || len(parts) < 6 || parts[1] != "repos" || parts[4] != "statuses" {
			p.state = "BAD REQUEST " + r.Method + " " + r.URL.Path
		}
		s.mu.Lock()
		s.posts = append(s.posts, p)
		s.mu.Unlock()
		if s.answer != nil && s.answer(w, r) {
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"id": 1, "status": %q}`, body.State)
	}))
	if tls {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func (s *giteaStandIn) got() []posted {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]posted(nil), s.posts...)
}

// waitPosts waits until the stand-in received n statuses and returns them.
func (s *giteaStandIn) waitPosts(t *testing.T, n int) []posted {
	t.Helper()
	eventually(t, fmt.Sprintf("%d commit statuses posted", n), func(context.Context) (bool, error) {
		return len(s.got()) >= n, nil
	})
	return s.got()
}

// commitStatusCase is a namespace with a repository, the token Secret and
// an agent.
func commitStatusCase(t *testing.T, o agentOptions) (client.Client, string, *repo, *agent) {
	t.Helper()
	c := setup(t)
	ns := env.Namespace(t)
	o.namespace = ns
	a := startAgent(t, o)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "host-token", Namespace: ns}, Data: map[string][]byte{"token": []byte(hostToken)}}
	if err := c.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	return c, ns, newRepo(t), a
}

func withCommitStatus(address string) func(*v1.GitSync) {
	return func(g *v1.GitSync) {
		g.Spec.CommitStatus = &v1.CommitStatusSpec{Provider: "gitea", SecretRef: v1.LocalObjectReference{Name: "host-token"}, Address: address}
		g.Spec.RetryInterval = &metav1.Duration{Duration: time.Second}
	}
}

// TestCommitStatusFollowsSyncs: a GitSync with spec.commitStatus sets
// pending then success on each commit it applies, with the tenant's token
// and its default context; a reconcile that changes nothing posts nothing
// (the stand-in gets exactly two statuses per commit, in order, since
// posts of one GitSync are sent in order); an apply that fails sets failure
// with the reason. Checked by dropping the "same" test in reportCommit (the
// poked reconcile then posts success again before the next commit's
// pending).
func TestCommitStatusFollowsSyncs(t *testing.T) {
	c, ns, rp, a := commitStatusCase(t, agentOptions{})
	host := newGiteaStandIn(t, nil)
	c1 := rp.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
	gs := newGitSync(ns, "app", rp.url(), withCommitStatus(host.URL))
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	got := host.waitPosts(t, 2)
	ctxName := "gitsync/" + ns + "/app"
	want := []posted{
		{commit: c1, state: "pending", description: "Applying revision main@sha1:" + c1, context: ctxName, auth: "token " + hostToken},
		{commit: c1, state: "success", description: "Applied revision main@sha1:" + c1, context: ctxName, auth: "token " + hostToken},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("posted\n%v\nwant\n%v", got, want)
	}

	// A reconcile of the converged GitSync: nothing to post.
	before := a.reconciles(t, "success")
	poke(t, c, key, "1")
	eventually(t, "the poked reconcile returned", func(context.Context) (bool, error) {
		return a.reconciles(t, "success") > before, nil
	})

	c2 := rp.commit(map[string]string{"deploy/a.yaml": configMap("a", "2")})
	request(t, c, key, "c2")
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, c2)
	})
	got = host.waitPosts(t, 4)
	if len(got) != 4 || got[2].commit != c2 || got[2].state != "pending" || got[3].commit != c2 || got[3].state != "success" {
		t.Fatalf("after the poke and commit 2, posted\n%v\nwant exactly pending and success for %s after the first two", got, c2)
	}

	// An object the apiserver refuses: failure with the reason.
	c3 := rp.commit(map[string]string{"deploy/b.yaml": configMap("Bad_Name", "x")})
	request(t, c, key, "c3")
	failed := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionFalse, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAttemptedRevision, c3)
	})
	ready := meta.FindStatusCondition(failed.Status.Conditions, v1.ConditionReady)
	got = host.waitPosts(t, 6)
	if got[4].commit != c3 || got[4].state != "pending" {
		t.Errorf("post 5 = %+v, want pending for %s", got[4], c3)
	}
	if got[5].commit != c3 || got[5].state != "failure" || !strings.HasPrefix(got[5].description, ready.Reason+": ") ||
		!strings.Contains(got[5].description, "Bad_Name") {
		t.Errorf("post 6 = %+v, want failure for %s with reason %s naming Bad_Name", got[5], c3, ready.Reason)
	}
	for _, p := range got {
		if len(p.description) > 255 {
			t.Errorf("description of %d bytes, over Gitea's limit", len(p.description))
		}
	}
}

// TestCommitStatusHostFailures: a host that answers 500, or never answers,
// or sits on an address the egress policy refuses, does not keep the
// GitSync from becoming Ready; the failure is counted and a Warning event
// names it, without the token.
func TestCommitStatusHostFailures(t *testing.T) {
	t.Run("500", func(t *testing.T) {
		c, ns, rp, a := commitStatusCase(t, agentOptions{})
		host := newGiteaStandIn(t, func(w http.ResponseWriter, _ *http.Request) bool {
			http.Error(w, `{"message": "internal error"}`, http.StatusInternalServerError)
			return true
		})
		rp.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
		gs := newGitSync(ns, "app", rp.url(), withCommitStatus(host.URL))
		if err := c.Create(context.Background(), gs); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, c, client.ObjectKeyFromObject(gs), v1.ConditionReady, metav1.ConditionTrue, nil)
		host.waitPosts(t, 1)
		waitCommitStatusEvent(t, c, ns, "HTTP 500")
		eventually(t, "the failed posts counted", func(context.Context) (bool, error) {
			return a.counter(t, "gitsync_commit_status_errors_total", "provider", "gitea") >= 1, nil
		})
	})

	// Checked by posting from the reconcile itself: the GitSync then never
	// becomes Ready while the host holds the request.
	t.Run("hanging", func(t *testing.T) {
		c, ns, rp, _ := commitStatusCase(t, agentOptions{commitStatusTimeout: 10 * time.Minute})
		release := make(chan struct{})
		host := newGiteaStandIn(t, func(_ http.ResponseWriter, r *http.Request) bool {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return false
		})
		t.Cleanup(func() { close(release) }) // before the stand-in closes
		rp.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
		gs := newGitSync(ns, "app", rp.url(), withCommitStatus(host.URL))
		if err := c.Create(context.Background(), gs); err != nil {
			t.Fatal(err)
		}
		host.waitPosts(t, 1) // the pending post, held
		waitCondition(t, c, client.ObjectKeyFromObject(gs), v1.ConditionReady, metav1.ConditionTrue, nil)
		if n := len(host.got()); n != 1 {
			t.Errorf("host got %d posts while the first is held, want 1 (posts of one GitSync go in order)", n)
		}
	})

	// Checked by building the client with a plain dialer (the stand-in on
	// loopback then gets the post).
	t.Run("egress refused", func(t *testing.T) {
		c, ns, rp, a := commitStatusCase(t, agentOptions{strictEgress: true, allowLocalSources: true})
		host := newGiteaStandIn(t, nil)
		rp.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
		gs := newGitSync(ns, "app", rp.url(), withCommitStatus(host.URL))
		if err := c.Create(context.Background(), gs); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, c, client.ObjectKeyFromObject(gs), v1.ConditionReady, metav1.ConditionTrue, nil)
		waitCommitStatusEvent(t, c, ns, "loopback")
		eventually(t, "the refused posts counted", func(context.Context) (bool, error) {
			return a.counter(t, "gitsync_commit_status_errors_total", "provider", "gitea") >= 1, nil
		})
		if n := len(host.got()); n != 0 {
			t.Errorf("the stand-in on loopback got %d posts, want 0", n)
		}
	})
}

// waitWarningEvent waits for an Event of reason whose message contains
// word, and fails on any Event of reason that is not a Warning or quotes
// secret (a token, a webhook address).
func waitWarningEvent(t *testing.T, c client.Client, ns, reason, word, secret string) {
	t.Helper()
	eventually(t, "a "+reason+" event naming "+word, func(ctx context.Context) (bool, error) {
		evs := &corev1.EventList{}
		if err := c.List(ctx, evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		found := false
		for _, e := range evs.Items {
			if e.Reason != reason {
				continue
			}
			if e.Type != corev1.EventTypeWarning || strings.Contains(e.Message, secret) {
				t.Fatalf("event %s %q: want a Warning without the secret", e.Type, e.Message)
			}
			found = found || strings.Contains(e.Message, word)
		}
		return found, nil
	})
}

// waitCommitStatusEvent waits for the CommitStatusFailed event containing
// word, and checks that no such event carries the token.
func waitCommitStatusEvent(t *testing.T, c client.Client, ns, word string) {
	t.Helper()
	waitWarningEvent(t, c, ns, "CommitStatusFailed", word, hostToken)
}

// counter returns the value of counter name's series with label=value.
func (a *agent) counter(t *testing.T, name, label, value string) float64 {
	t.Helper()
	mfs, err := a.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestCommitStatusPrivateCA: a host whose certificate comes from a private
// CA is posted to when the Secret's ca.crt holds that CA. Checked by
// dropping the ca.crt branch in postCommit (the post then fails on the
// unknown authority and the test sees no status).
func TestCommitStatusPrivateCA(t *testing.T) {
	c, ns, rp, _ := commitStatusCase(t, agentOptions{})
	host := startGiteaStandIn(t, nil, true)
	secret := &corev1.Secret{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "host-token"}, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data["ca.crt"] = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: host.Certificate().Raw})
	if err := c.Update(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	c1 := rp.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
	gs := newGitSync(ns, "app", rp.url(), withCommitStatus(host.URL))
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	got := host.waitPosts(t, 2)
	if got[1].commit != c1 || got[1].state != "success" {
		t.Errorf("posted %v, want success for %s second", got, c1)
	}
}
