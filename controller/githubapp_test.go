package controller_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gittest"
)

// TestGitHubAppSource: GitSyncs whose source Secrets hold a GitHub App
// (id and private key, no installation id) converge against a Git server
// that lets in only x-access-token with the token a stand-in GitHub API
// minted after checking the app's JWT. The installation is looked up for
// team/app once and one token serves both GitSyncs (two Secrets, one app)
// and a's commit statuses (spec.commitStatus, provider github, the same
// Secret).
// A Secret with another private key leaves its GitSync Stalled
// (AuthenticationFailed) with GitHub's 401 message and no key material or
// token in its status (the app id is masked too: every value of a named
// Secret is).
//
// Checked: with sourceAuth not minting the token (returning after
// AuthFromSecret), both good GitSyncs fail waiting for Ready (the server
// asks for credentials); with classifyGitHubApp answering retry, the wrong
// key's subtest fails waiting for Stalled; with postCommit ignoring the
// app, no status is posted (the stand-in refuses the Secret's empty token).
func TestGitHubAppSource(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	root := t.TempDir()
	repo := gittest.NewRepo(t, filepath.Join(root, "team", "app.git"))
	commit := repo.Commit("apps", map[string]string{"a/cm.yaml": configMap("a", "1"), "b/cm.yaml": configMap("b", "1"), "bad/cm.yaml": configMap("bad", "1")})
	srv := gittest.New(t, root, gittest.Options{User: "x-access-token", Password: "none minted yet"})
	gh := gittest.NewGitHubApp(t, gittest.GitHubAppOptions{Repos: []string{"team/app"}, OnToken: srv.SetPassword})
	startAgent(t, agentOptions{namespace: ns})

	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	wrong := gh.Secret(false)
	wrong["githubAppPrivateKey"] = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(other)})
	secrets := map[string]map[string][]byte{"a": gh.Secret(false), "b": gh.Secret(false), "bad": wrong}
	for name, data := range secrets {
		createSecret(t, c, ns, name+"-app", data)
		gs := newGitSync(ns, name, srv.URL+"/team/app.git", func(g *v1.GitSync) {
			g.Spec.Source.Path = g.Name
			g.Spec.Source.SecretRef = &v1.LocalObjectReference{Name: g.Name + "-app"}
			if g.Name == "a" { // statuses with the app's token too
				g.Spec.CommitStatus = &v1.CommitStatusSpec{Provider: "github", SecretRef: v1.LocalObjectReference{Name: "a-app"}, Address: gh.URL}
			}
		})
		if err := c.Create(context.Background(), gs); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"a", "b"} {
		waitCondition(t, c, client.ObjectKey{Namespace: ns, Name: name}, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
			return strings.Contains(g.Status.LastAppliedRevision, commit)
		})
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{}); err != nil {
			t.Fatalf("ConfigMap %s: %v", name, err)
		}
	}
	eventually(t, "a commit status posted with the app's token", func(context.Context) (bool, error) { return gh.Statuses() > 0, nil })
	if gh.Mints() != 1 || gh.Lookups() != 1 {
		t.Errorf("stand-in minted %d tokens after %d lookups; want one token shared by both GitSyncs and the statuses", gh.Mints(), gh.Lookups())
	}

	t.Run("wrong key", func(t *testing.T) {
		gs := waitCondition(t, c, client.ObjectKey{Namespace: ns, Name: "bad"}, v1.ConditionReady, metav1.ConditionFalse, func(g *v1.GitSync) bool {
			return meta.FindStatusCondition(g.Status.Conditions, v1.ConditionStalled) != nil
		})
		assertStalled(t, gs, true)
		ready := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReady)
		want := []string{"Secret/" + ns + "/bad-app", "GitHub App ", "installation lookup for team/app", "HTTP 401", "A JSON web token could not be decoded", "private key"}
		if ready.Reason != v1.ReasonAuthenticationFailed || !containsAll(ready.Message, want) {
			t.Fatalf("Ready %s: %q; want AuthenticationFailed naming %q", ready.Reason, ready.Message, want)
		}
		status, _ := json.Marshal(gs.Status)
		for _, secret := range [][]byte{wrong["githubAppPrivateKey"], gh.KeyPEM} {
			line := strings.Split(string(secret), "\n")[1]
			if strings.Contains(string(status), line) {
				t.Fatalf("status carries private key material: %s", status)
			}
		}
		if tok := gh.Token(); strings.Contains(string(status), tok) {
			t.Fatalf("status carries the token: %s", status)
		}
	})
}
