package controller_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/controller"
)

// signedPush posts a GitHub push of repoURL's main branch signed with
// secret and returns the status code.
func signedPush(t *testing.T, hookURL, repoURL string, secret []byte, delivery string) int {
	t.Helper()
	// The delivery goes into the body too: hosts do not sign the delivery
	// ID, so a body seen before is a replay.
	body := []byte(fmt.Sprintf(`{"ref":"refs/heads/main","after":%q,"repository":{"clone_url":%q}}`, delivery, repoURL))
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, hookURL+"/hook/github", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestWebhookFloodReadsNoSecrets is the attack of issue 18: whoever can
// reach the webhook port sends a flood of pushes with wrong signatures for
// a repository 50 GitSyncs follow (5 webhook Secrets between them), after
// the old 30 s Secret cache would have expired. The agent's lookup serves
// the Secrets from its watch: the flood causes no Secret request at the
// apiserver. A rotated secret is used as soon as the watch sees it.
//
// Checked by having the agent read webhook secrets with
// controller.WebhookSecretReader over the API reader (the 30 s cache): the
// flood after expiry reads the Secrets.
func TestWebhookFloodReadsNoSecrets(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	clk := clocktesting.NewFakePassiveClock(time.Now())
	var mu sync.Mutex
	var enqueued []string
	ln := listenLoopback(t)
	a := startAgent(t, agentOptions{namespace: ns, webhook: ln,
		webhookLookup: &controller.WebhookLookupOptions{SecretTTL: 30 * time.Second, Clock: clk},
		enqueued: func(key string, _ time.Time) {
			mu.Lock()
			defer mu.Unlock()
			enqueued = append(enqueued, key)
		}})
	hookURL := "http://" + ln.Addr().String()
	ctx := context.Background()
	repoURL := "http://127.0.0.1:1/org/mono.git" // refused at once: the GitSyncs only need to exist
	for i := range 5 {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("hook-", i), Namespace: ns},
			StringData: map[string]string{controller.WebhookSecretKey: fmt.Sprint("secret-", i)}}
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		gs := newGitSync(ns, fmt.Sprint("app-", i), repoURL, func(g *v1.GitSync) {
			g.Spec.Source.Path = fmt.Sprint("apps/", i)
			g.Spec.Webhook = &v1.WebhookSpec{SecretRef: v1.LocalObjectReference{Name: fmt.Sprint("hook-", i%5)}}
		})
		if err := c.Create(ctx, gs); err != nil {
			t.Fatal(err)
		}
	}

	taken := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := slices.Clone(enqueued)
		enqueued = nil
		return out
	}

	// A good push for hook-0's ten GitSyncs: all are known and watched.
	eventually(t, "a signed push enqueues hook-0's GitSyncs", func(context.Context) (bool, error) {
		signedPush(t, hookURL, repoURL, []byte("secret-0"), fmt.Sprint("good-", time.Now().UnixNano()))
		return len(taken()) == 10, nil
	})
	for i := range 5 { // every Secret's watch has started and synced
		signedPush(t, hookURL, repoURL, []byte(fmt.Sprint("secret-", i)), fmt.Sprint("warm-", i))
	}
	taken()
	clk.SetTime(clk.Now().Add(31 * time.Second))
	before := len(a.count.requests())

	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 25 {
				if code := signedPush(t, hookURL, repoURL, []byte("wrong"), fmt.Sprintf("flood-%d-%d", w, i)); code != http.StatusAccepted {
					t.Errorf("flood request answered %d, want 202", code)
				}
			}
		})
	}
	wg.Wait()
	var secretReads []string
	for _, r := range a.count.requests()[before:] {
		if strings.Contains(r, "/secrets") {
			secretReads = append(secretReads, r)
		}
	}
	if len(secretReads) != 0 {
		t.Errorf("400 wrongly signed pushes caused %d Secret requests, want 0: %v", len(secretReads), secretReads)
	}
	if got := taken(); len(got) != 0 {
		t.Errorf("wrongly signed pushes enqueued %v", got)
	}

	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hook-1"}, s); err != nil {
		t.Fatal(err)
	}
	s.Data = map[string][]byte{controller.WebhookSecretKey: []byte("rotated")}
	if err := c.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the rotated secret verifies", func(context.Context) (bool, error) {
		signedPush(t, hookURL, repoURL, []byte("rotated"), fmt.Sprint("rotated-", time.Now().UnixNano()))
		return len(taken()) == 10, nil
	})
}
