package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
)

// fireWebhook sends what GitHub sends on a push to main: a push event naming
// the commit pushed ("after"), signed with the shared secret
// (X-Hub-Signature-256). The agent drops a signed body it has seen before as
// a replay, so each push's body differs, as GitHub's do.
func fireWebhook(ctx context.Context, addr, repoURL, after string) error {
	body, err := json.Marshal(map[string]any{
		"ref":        "refs/heads/main",
		"after":      after,
		"repository": map[string]string{"clone_url": repoURL},
	})
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, []byte(webhookSecret))
	mac.Write(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/hook/github", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("webhook answered %s", resp.Status)
	}
	say("webhook POST /hook/github answered %s", resp.Status)
	return nil
}

// run shows a command and its output, as the user would type it.
func run(bin string, args ...string) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	_ = cmd.Run()
}
