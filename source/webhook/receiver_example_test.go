package webhook_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"gitsync.dev/gitsync/source/webhook"
)

// A receiver for a generic CI hook, feeding a Trigger that coalesces bursts.
func ExampleNewReceiver() {
	secret := []byte("webhook-secret")
	trigger := webhook.NewTrigger()
	opts := webhook.DefaultOptions()
	opts.Lookup = func(_ context.Context, repoURL string) []webhook.Target {
		if repoURL == "git.example.com/org/app" { // NormalizeRepoURL of the GitSync's spec.webhook.url
			return []webhook.Target{{Key: "prod/app", Branch: "main", Secret: secret}}
		}
		return nil
	}
	opts.Enqueue = trigger.Enqueue
	rcv, err := webhook.NewReceiver(opts)
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(rcv) // in production: webhook.NewServer(":9292", rcv).ListenAndServe()
	defer srv.Close()

	body := []byte(`{"repository": "https://git.example.com/org/app.git", "branch": "main"}`)
	for range 3 { // a burst of identical pushes
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte(ts + "."))
		mac.Write(body)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/hook/generic", bytes.NewReader(body))
		req.Header.Set("X-Timestamp", ts)
		req.Header.Set("X-Signature", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode)
	}
	fmt.Println(trigger.Take())
	// Output:
	// 202
	// 202
	// 202
	// [prod/app]
}
