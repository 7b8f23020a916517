package controller_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/controller"
)

// webhookAgent is a running agent serving its webhook receiver on a
// loopback listener, as `gitsync run --webhook-addr` does.
type webhookAgent struct {
	*agent
	url      string
	enqueued atomic.Int32
}

// startWebhookAgent starts the agent for ns with its webhook receiver
// (lookup by URL index and Secret watch, Observe for metrics and events,
// enqueues to the reconciler), counting the keys the receiver enqueues.
func startWebhookAgent(t *testing.T, ns string) *webhookAgent {
	t.Helper()
	w := &webhookAgent{}
	ln := listenLoopback(t)
	w.agent = startAgent(t, agentOptions{namespace: ns, webhook: ln, enqueued: func(string, time.Time) { w.enqueued.Add(1) }})
	w.url = "http://" + ln.Addr().String()
	return w
}

// listenLoopback returns a listener on a free loopback port; the agent
// closes it when it stops.
func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// githubPush is a GitHub push payload for repoURL's main branch at commit.
func githubPush(repoURL, commit string) []byte {
	return []byte(fmt.Sprintf(`{"ref":"refs/heads/main","after":%q,"repository":{"clone_url":%q}}`, commit, repoURL))
}

// sendGitHub posts a push signed with secret the way GitHub does and returns
// everything the sender sees of the answer but its Date.
func (w *webhookAgent) sendGitHub(t *testing.T, body []byte, secret, delivery string) string {
	t.Helper()
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, w.url+"/hook/github", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	resp.Header.Del("Date")
	var hs []string
	for k, v := range resp.Header {
		hs = append(hs, k+": "+strings.Join(v, ","))
	}
	slices.Sort(hs)
	return fmt.Sprintf("%d\n%s\n%s", resp.StatusCode, strings.Join(hs, "\n"), b)
}

// webhookRequests reads gitsync_webhook_requests_total for provider and
// result, summed over the status codes answered.
func (a *agent) webhookRequests(t *testing.T, provider, result string) float64 {
	t.Helper()
	mfs, err := a.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "gitsync_webhook_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if got["provider"] == provider && got["result"] == result {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// webhookGitSync creates a GitSync of repo with a webhook Secret holding
// secret, waits until it is Ready and the receiver's index knows it.
func webhookGitSync(t *testing.T, c client.Client, ns string, r *repo, secret string) client.ObjectKey {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: ns}, StringData: map[string]string{controller.WebhookSecretKey: secret}}
	if err := c.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	gs := newGitSync(ns, "app", r.url(), func(g *v1.GitSync) {
		g.Spec.Webhook = &v1.WebhookSpec{SecretRef: v1.LocalObjectReference{Name: "hook"}}
	})
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	return key
}

// TestWebhookBadSignatureRevealsNothing: a push for the GitSync's repository
// signed with a wrong secret gets exactly the answer a push for a repository
// nobody follows gets (202, same body and headers), triggers nothing, and is
// seen by the operator: gitsync_webhook_requests_total counts it as
// bad_signature and the GitSync gets a Warning event WebhookRejected naming
// its Secret; the unknown repository is counted as unknown_repository.
//
// Checked by making Receiver.handle answer 401 to a bad signature again (the
// answers then differ), and by dropping the Observe wiring (no metric, no
// event).
func TestWebhookBadSignatureRevealsNothing(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	w := startWebhookAgent(t, ns)
	r := newRepo(t)
	commit := r.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
	key := webhookGitSync(t, c, ns, r, "the-right-secret")
	eventually(t, "the receiver's index knows the repository", func(context.Context) (bool, error) {
		w.sendGitHub(t, githubPush(r.url(), commit), "wrong", "probe")
		return w.webhookRequests(t, "github", "bad_signature") > 0, nil
	})
	base, baseUnknown := w.webhookRequests(t, "github", "bad_signature"), w.webhookRequests(t, "github", "unknown_repository")

	followed := w.sendGitHub(t, githubPush(r.url(), commit), "a-wrong-secret", "d-1")
	unknown := w.sendGitHub(t, githubPush("file:///nobody/follows/this", commit), "a-wrong-secret", "d-2")
	if followed != unknown || !strings.HasPrefix(followed, "202\n") {
		t.Errorf("bad signature for a followed repository answered\n%s\nan unknown repository\n%s\nwant both the same 202", followed, unknown)
	}
	if n := w.enqueued.Load(); n != 0 {
		t.Errorf("%d enqueues for requests that did not verify, want 0", n)
	}
	if got := w.webhookRequests(t, "github", "bad_signature") - base; got != 1 {
		t.Errorf("bad_signature counted %v more, want 1", got)
	}
	if got := w.webhookRequests(t, "github", "unknown_repository") - baseUnknown; got != 1 {
		t.Errorf("unknown_repository counted %v, want 1", got)
	}
	var evs []corev1.Event
	eventually(t, "a WebhookRejected event", func(context.Context) (bool, error) {
		evs = eventsWithReason(t, c, key, v1.ReasonWebhookRejected)
		return len(evs) > 0, nil
	})
	if ev := evs[0]; ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Message, "Secret/"+ns+"/hook") || strings.Contains(ev.Message, "wrong") {
		t.Errorf("event = %s %q, want a Warning naming Secret/%s/hook and nothing of the request", ev.Type, ev.Message, ns)
	}
}

// TestWebhookReplayTriggersOneSync: a signed delivery syncs the new commit;
// the same delivery sent again, as is or under a fresh delivery ID, is
// answered alike but enqueues nothing (the commit pushed since stays
// unapplied until a new delivery arrives).
//
// Checked by making the receiver's replay memory always report a first
// time: the replays then enqueue and the enqueue count fails.
func TestWebhookReplayTriggersOneSync(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	w := startWebhookAgent(t, ns)
	r := newRepo(t)
	r.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
	key := webhookGitSync(t, c, ns, r, "s3cret")
	eventually(t, "the receiver's index knows the repository", func(context.Context) (bool, error) {
		w.sendGitHub(t, []byte(`{"ref":"refs/heads/other","repository":{"clone_url":"`+r.url()+`"}}`), "s3cret", "probe-"+time.Now().String())
		return w.webhookRequests(t, "github", "accepted") > 0, nil
	})

	commit2 := r.commit(map[string]string{"deploy/a.yaml": configMap("a", "2")})
	push := githubPush(r.url(), commit2)
	first := w.sendGitHub(t, push, "s3cret", "delivery-1")
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, commit2)
	})
	if n := w.enqueued.Load(); n != 1 {
		t.Fatalf("%d enqueues after one delivery, want 1", n)
	}

	r.commit(map[string]string{"deploy/a.yaml": configMap("a", "3")})
	for _, id := range []string{"delivery-1", "fresh-id-same-payload"} {
		if again := w.sendGitHub(t, push, "s3cret", id); again != first {
			t.Errorf("replay %s answered\n%s\nthe delivery\n%s", id, again, first)
		}
	}
	if n := w.enqueued.Load(); n != 1 {
		t.Errorf("%d enqueues after two replays, want 1 (one sync per delivery)", n)
	}
	if got := w.webhookRequests(t, "github", "replayed"); got != 2 {
		t.Errorf("replayed counted %v, want 2", got)
	}
}
