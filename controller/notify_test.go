package controller_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

const (
	// hookKey signs the webhook bodies; hookPath is the secret part of
	// every destination's address, which no event may quote.
	hookKey  = "hmac-key-of-the-tenant"
	hookPath = "/T0/B0/hook-s3cr3t"
)

// note is one request a stand-in receiver got.
type note struct {
	signature string
	body      []byte
	fields    map[string]any
}

// receivers is one loopback server standing in for a generic webhook,
// Slack, Teams and Discord (each under its own path), handing each request
// to its provider's channel; answer, when set, is the status code.
type receivers struct {
	*httptest.Server
	got map[string]chan note
}

func newReceivers(t *testing.T, answer int) *receivers {
	t.Helper()
	rs := &receivers{got: map[string]chan note{}}
	for _, p := range []string{"webhook", "slack", "teams", "discord"} {
		rs.got[p] = make(chan note, 16)
	}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		provider, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		ch, ok := rs.got[provider]
		if r.Method != http.MethodPost || !ok || "/"+rest != hookPath {
			http.Error(w, "no such hook", http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		n := note{signature: r.Header.Get("X-Gitsync-Signature"), body: body}
		_ = json.Unmarshal(body, &n.fields)
		ch <- n
		if answer != 0 {
			w.WriteHeader(answer)
		}
	}))
	t.Cleanup(rs.Close)
	return rs
}

// next waits for provider's next notification.
func (rs *receivers) next(t *testing.T, provider string) note {
	t.Helper()
	select {
	case n := <-rs.got[provider]:
		return n
	case <-time.After(60 * time.Second):
		t.Fatalf("no %s notification arrived", provider)
	}
	return note{}
}

// notifySecrets creates one Secret per provider, notify-PROVIDER, with
// the receiver's address and the webhook's key.
func notifySecrets(t *testing.T, c client.Client, ns string, rs *receivers) {
	t.Helper()
	for p := range rs.got {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "notify-" + p, Namespace: ns},
			Data: map[string][]byte{"address": []byte(rs.URL + "/" + p + hookPath), "token": []byte(hookKey)}}
		if err := c.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
}

func notifyTo(provider string, events ...v1.NotificationEvent) v1.NotificationSpec {
	return v1.NotificationSpec{Provider: provider, SecretRef: v1.LocalObjectReference{Name: "notify-" + provider}, Events: events}
}

func withNotifications(ns ...v1.NotificationSpec) func(*v1.GitSync) {
	return func(g *v1.GitSync) {
		g.Spec.Notifications = ns
		g.Spec.RetryInterval = &metav1.Duration{Duration: time.Second}
	}
}

// checkWebhook checks a webhook notification's signature and fields.
func checkWebhook(t *testing.T, n note, ns, state, reason, revisionHas, messageHas string) {
	t.Helper()
	m := hmac.New(sha256.New, []byte(hookKey))
	m.Write(n.body)
	if want := "sha256=" + hex.EncodeToString(m.Sum(nil)); n.signature != want {
		t.Errorf("signature %q, want %q", n.signature, want)
	}
	f := n.fields
	ref, _ := f["gitsync"].(map[string]any)
	if ref["namespace"] != ns || ref["name"] != "app" || f["state"] != state || f["reason"] != reason ||
		!strings.Contains(f["revision"].(string), revisionHas) || !strings.Contains(f["message"].(string), messageHas) {
		t.Errorf("webhook body %s, want state %s reason %s revision ~%s message ~%q", n.body, state, reason, revisionHas, messageHas)
	}
	if _, err := time.Parse(time.RFC3339, f["time"].(string)); err != nil {
		t.Errorf("time: %v", err)
	}
}

// TestNotificationsFollowTransitions: a GitSync with a webhook, Slack,
// Teams and Discord destination tells each of them when it becomes Ready,
// fails and recovers, once per transition: a reconcile that changes
// nothing and retries failing for the same reason send nothing (each
// destination's next notification is the next transition), and Slack,
// asking for Failed and Recovered only, is not told of Ready.
//
// Checked by making transitionOf report every pass as Ready: the webhook's
// second notification is then a Ready, not the Failed.
func TestNotificationsFollowTransitions(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	rs := newReceivers(t, http.StatusOK)
	notifySecrets(t, c, ns, rs)
	rp := newRepo(t)
	c1 := rp.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
	gs := newGitSync(ns, "app", rp.url(), withNotifications(notifyTo("webhook"),
		notifyTo("slack", v1.NotifyFailed, v1.NotifyRecovered), notifyTo("teams"), notifyTo("discord")))
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	checkWebhook(t, rs.next(t, "webhook"), ns, "Ready", "ReconciliationSucceeded", c1, c1)
	if n := rs.next(t, "teams"); n.fields["type"] != "message" || !strings.Contains(string(n.body), "AdaptiveCard") ||
		!strings.Contains(string(n.body), ns+"/app is Ready") {
		t.Errorf("teams card %s", n.body)
	}
	if n := rs.next(t, "discord"); !strings.Contains(n.fields["content"].(string), ns+"/app is Ready") {
		t.Errorf("discord message %s", n.body)
	}

	// A reconcile of the converged GitSync: nothing to tell.
	before := a.reconciles(t, "success")
	poke(t, c, key, "1")
	eventually(t, "the poked reconcile returned", func(context.Context) (bool, error) {
		return a.reconciles(t, "success") > before, nil
	})

	// An object the apiserver refuses: Failed with the reason, to all four.
	c2 := rp.commit(map[string]string{"deploy/b.yaml": configMap("Bad_Name", "x")})
	request(t, c, key, "c2")
	failed := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionFalse, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAttemptedRevision, c2)
	})
	reason := meta.FindStatusCondition(failed.Status.Conditions, v1.ConditionReady).Reason
	checkWebhook(t, rs.next(t, "webhook"), ns, "Failed", reason, c2, "Bad_Name")
	if n := rs.next(t, "slack"); !strings.Contains(n.fields["text"].(string), "failed: "+reason) || !strings.Contains(string(n.body), "Bad_Name") {
		t.Errorf("slack message %s, want the failure first (Ready is not among its events)", n.body)
	}
	for _, p := range []string{"teams", "discord"} {
		if n := rs.next(t, p); !strings.Contains(string(n.body), "failed: "+reason) {
			t.Errorf("%s message %s, want the failure", p, n.body)
		}
	}

	// Fixed: Recovered, to all four.
	c3 := rp.commit(map[string]string{"deploy/b.yaml": configMap("b", "x")})
	request(t, c, key, "c3")
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, c3)
	})
	checkWebhook(t, rs.next(t, "webhook"), ns, "Recovered", "ReconciliationSucceeded", c3, c3)
	for _, p := range []string{"slack", "teams", "discord"} {
		if n := rs.next(t, p); !strings.Contains(string(n.body), ns+"/app recovered") {
			t.Errorf("%s message %s, want the recovery", p, n.body)
		}
	}
}

// TestNotificationFailures: a destination that answers 500, or sits on an
// address the egress policy refuses, does not keep the GitSync from
// becoming Ready; the failure is counted and a Warning event says so,
// without the address.
func TestNotificationFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   agentOptions
		answer int
		word   string
		// reached says whether the receiver is asked.
		reached bool
	}{
		{"500", agentOptions{}, http.StatusInternalServerError, "HTTP 500", true},
		// Checked by building notifyClient with a plain dialer: the
		// receiver on loopback then gets the notification.
		{"egress refused", agentOptions{strictEgress: true, allowLocalSources: true}, 0, "loopback", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := setup(t)
			ns := env.Namespace(t)
			tc.opts.namespace = ns
			a := startAgent(t, tc.opts)
			rs := newReceivers(t, tc.answer)
			notifySecrets(t, c, ns, rs)
			rp := newRepo(t)
			rp.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
			gs := newGitSync(ns, "app", rp.url(), withNotifications(notifyTo("slack")))
			if err := c.Create(context.Background(), gs); err != nil {
				t.Fatal(err)
			}
			waitCondition(t, c, client.ObjectKeyFromObject(gs), v1.ConditionReady, metav1.ConditionTrue, nil)
			if tc.reached {
				rs.next(t, "slack")
			}
			waitNotificationEvent(t, c, ns, tc.word)
			eventually(t, "the failed notification counted", func(context.Context) (bool, error) {
				return a.counter(t, "gitsync_notification_errors_total", "provider", "slack") >= 1, nil
			})
			if !tc.reached && len(rs.got["slack"]) != 0 {
				t.Error("the receiver on loopback was reached past the egress policy")
			}
		})
	}
}

// waitNotificationEvent waits for a NotificationFailed event containing
// word, and checks that none quotes the destination's address.
func waitNotificationEvent(t *testing.T, c client.Client, ns, word string) {
	t.Helper()
	waitWarningEvent(t, c, ns, "NotificationFailed", word, "s3cr3t")
}

// TestNotificationSecretReadAsAccount is the attack: a tenant names, in
// spec.notifications, a Secret its ServiceAccount may not get, hoping the
// agent reads it with its own rights and sends its key (or to its address).
// Nothing reaches the receiver; the send fails visibly (an Event naming
// the Secret). Once the account may get the Secret, the next transition is
// sent.
//
// Checked: with sendNotification reading the Secret with the agent's API
// reader, the receiver gets the first Ready at once.
func TestNotificationSecretReadAsAccount(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	tenant(t, c, ns)
	rs := newReceivers(t, http.StatusOK)
	notifySecrets(t, c, ns, rs)
	rp := newRepo(t)
	rp.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
	gs := newGitSync(ns, "app", rp.url(), withNotifications(notifyTo("webhook")), func(g *v1.GitSync) { g.Spec.ServiceAccountName = "tenant" })
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	eventually(t, "NotificationFailed event naming the Secret", func(ctx context.Context) (bool, error) {
		evs := &corev1.EventList{}
		if err := c.List(ctx, evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
			return e.Reason == "NotificationFailed" && strings.Contains(e.Message, "secrets/notify-webhook")
		}), nil
	})
	if n := len(rs.got["webhook"]); n != 0 {
		t.Fatalf("the receiver got %d notifications from a Secret the account may not read", n)
	}

	grantGet(t, c, ns, "notify-webhook")
	c2 := rp.commit(map[string]string{"deploy/a.yaml": configMap("a", "2")})
	request(t, c, key, "c2")
	checkWebhook(t, rs.next(t, "webhook"), ns, "Ready", "ReconciliationSucceeded", c2, c2)
}

// TestNotificationsAfterRestart: an agent started again finds the GitSync's
// state in its status and sends nothing for it; the next transition is the
// next notification.
//
// Checked by passing transitionOf a nil before (the state before the pass
// forgotten, as an in-memory memory would be): the second agent then sends
// Ready for the first commit again.
func TestNotificationsAfterRestart(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	first := startAgent(t, agentOptions{namespace: ns})
	rs := newReceivers(t, http.StatusOK)
	notifySecrets(t, c, ns, rs)
	rp := newRepo(t)
	c1 := rp.commit(map[string]string{"deploy/a.yaml": configMap("a", "1")})
	gs := newGitSync(ns, "app", rp.url(), withNotifications(notifyTo("webhook")))
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	checkWebhook(t, rs.next(t, "webhook"), ns, "Ready", "ReconciliationSucceeded", c1, c1)
	first.stop()

	second := startAgent(t, agentOptions{namespace: ns})
	eventually(t, "the second agent reconciled the GitSync", func(context.Context) (bool, error) {
		return second.reconciles(t, "success") >= 1, nil
	})
	c2 := rp.commit(map[string]string{"deploy/a.yaml": configMap("a", "2")})
	request(t, c, key, "c2")
	checkWebhook(t, rs.next(t, "webhook"), ns, "Ready", "ReconciliationSucceeded", c2, c2)
}

// TestNotificationMasksSecretValues: a failure whose message quotes a value
// substituted from a Secret (the name of an object the apiserver refuses)
// is sent with the value masked, as in the Ready condition.
//
// Checked with the sync's redactor out of the way (scrub returning at once,
// notifyTransition sending the message without out.red): the value then
// reaches the receiver.
func TestNotificationMasksSecretValues(t *testing.T) {
	const value = "tenant-secret-value-42"
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	rs := newReceivers(t, http.StatusOK)
	notifySecrets(t, c, ns, rs)
	vars := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vars", Namespace: ns}, Data: map[string][]byte{"SUFFIX": []byte(value)}}
	if err := c.Create(context.Background(), vars); err != nil {
		t.Fatal(err)
	}
	rp := newRepo(t)
	rp.commit(map[string]string{"deploy/a.yaml": configMap("Bad_${SUFFIX}", "x")})
	gs := newGitSync(ns, "app", rp.url(), withNotifications(notifyTo("webhook")), func(g *v1.GitSync) {
		g.Spec.SubstituteFrom = []v1.SubstituteReference{{Kind: "Secret", Name: "vars"}}
	})
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	failed := waitCondition(t, c, client.ObjectKeyFromObject(gs), v1.ConditionReady, metav1.ConditionFalse, nil)
	ready := meta.FindStatusCondition(failed.Status.Conditions, v1.ConditionReady)
	n := rs.next(t, "webhook")
	checkWebhook(t, n, ns, "Failed", ready.Reason, "", "Bad_")
	if strings.Contains(string(n.body), value) {
		t.Errorf("the notification quotes the Secret's value: %s", n.body)
	}
}
