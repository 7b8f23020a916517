package controller_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// fakeCluster is a TLS server standing in for a tenant-named "remote
// cluster": it records every request and whether it carried credentials,
// and answers with a body no status may ever quote.
type fakeCluster struct {
	srv *httptest.Server
	ca  []byte // PEM of the server certificate

	mu       sync.Mutex
	requests []string
	authz    []string // Authorization headers seen
}

const fakeClusterMarker = "FAKE-CLUSTER-BODY-7f3a"

func newFakeCluster(t *testing.T) *fakeCluster {
	t.Helper()
	f := &fakeCluster{}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r.Method+" "+r.URL.Path)
		if a := r.Header.Get("Authorization"); a != "" {
			f.authz = append(f.authz, a)
		}
		f.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/api") {
			// What an internal service's error page would say; client-go
			// quotes a text body as the error message.
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, "%s secret-from-inside", fakeClusterMarker)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><body>%s</body></html>", fakeClusterMarker)
	}))
	t.Cleanup(f.srv.Close)
	f.ca = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
	return f
}

func (f *fakeCluster) seen() (requests, authz []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...), append([]string(nil), f.authz...)
}

// kubeconfigYAML is a one-cluster, one-user kubeconfig for server with the
// given cluster and user fields (YAML lines, already indented).
func kubeconfigYAML(server, cluster, user string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: remote
  cluster:
    server: %s
%s
users:
- name: tenant
  user:
%s
contexts:
- name: remote
  context: {cluster: remote, user: tenant}
current-context: remote
`, server, cluster, user)
}

// clientCertFiles writes a self-signed client certificate and its key.
func clientCertFiles(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agent"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	writeFile(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	writeFile(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	return certFile, keyFile
}

func writeFile(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}

// createRemoteGitSync creates a kubeconfig Secret and a GitSync targeting it.
func createRemoteGitSync(t *testing.T, c client.Client, ns, name, kubeconfig string) client.ObjectKey {
	t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{"value": []byte(kubeconfig)}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	r := newRepo(t)
	r.commit(map[string]string{"deploy/a.yaml": configMap(name, "git")})
	gs := newGitSync(ns, name, r.url(), func(g *v1.GitSync) {
		g.Spec.KubeConfig = &v1.KubeConfigReference{SecretRef: v1.SecretKeyReference{Name: name}}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	return client.ObjectKeyFromObject(gs)
}

// waitRefusedOrReached waits for whichever comes first: key Stalled, or a
// request at remote.
func waitRefusedOrReached(t *testing.T, c client.Client, key client.ObjectKey, remote *fakeCluster) {
	t.Helper()
	eventually(t, "GitSync stalled or remote reached", func(ctx context.Context) (bool, error) {
		gs := &v1.GitSync{}
		if err := c.Get(ctx, key, gs); err != nil {
			return false, err
		}
		requests, _ := remote.seen()
		return meta.IsStatusConditionTrue(gs.Status.Conditions, v1.ConditionStalled) || len(requests) > 0, nil
	})
}

// waitStalledNaming waits until key is Stalled for InvalidSpec with a
// message containing every word.
func waitStalledNaming(t *testing.T, c client.Client, key client.ObjectKey, words ...string) *v1.GitSync {
	t.Helper()
	return waitCondition(t, c, key, v1.ConditionStalled, metav1.ConditionTrue, func(gs *v1.GitSync) bool {
		cond := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionStalled)
		if cond.Reason != v1.ReasonInvalidSpec {
			return false
		}
		for _, w := range words {
			if !strings.Contains(cond.Message, w) {
				t.Logf("Stalled message %q lacks %q", cond.Message, w)
				return false
			}
		}
		return true
	})
}

// TestKubeconfigReferencesRefused: a spec.kubeConfig that refers to files
// on the agent's disk (a token, a client certificate and key, a CA) or runs
// a plugin is refused before any connection: the GitSync is Stalled with
// the field named, and the remote saw no request, so never the agent's
// token. The loopback network is allowed here, so the file reference is
// the only reason to refuse. How this was checked: with refusedFields
// (and the rest.Config check after it) disabled, the tokenFile case sends
// "Bearer the-agents-own-token" to the remote and client-key sends its
// inline token; the other cases never stall with the field named.
func TestKubeconfigReferencesRefused(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	remote := newFakeCluster(t)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	writeFile(t, tokenFile, []byte("the-agents-own-token"), 0o600)
	caFile := filepath.Join(dir, "ca.crt")
	writeFile(t, caFile, remote.ca, 0o600)
	certFile, keyFile := clientCertFiles(t, dir)
	credScript := filepath.Join(dir, "cred.sh")
	writeFile(t, credScript, []byte("#!/bin/sh\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"exec-token\"}}'\n"), 0o700)
	caData := "    certificate-authority-data: " + base64.StdEncoding.EncodeToString(remote.ca)

	tests := []struct {
		name, cluster, user, field string
	}{
		{name: "tokenfile", cluster: caData, user: "    tokenFile: " + tokenFile, field: "users[0].user.tokenFile"},
		{name: "client-cert", cluster: caData, user: "    client-certificate: " + certFile + "\n    client-key: " + keyFile, field: "users[0].user.client-certificate"},
		{name: "client-key", cluster: caData, user: "    client-key: " + keyFile + "\n    token: inline", field: "users[0].user.client-key"},
		{name: "ca-file", cluster: "    certificate-authority: " + caFile, user: "    token: inline", field: "clusters[0].cluster.certificate-authority"},
		{name: "exec", cluster: caData, user: "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: " + credScript + "\n      interactiveMode: Never", field: "users[0].user.exec"},
		{name: "auth-provider", cluster: caData, user: "    auth-provider:\n      name: oidc\n      config: {id-token: x, idp-issuer-url: SERVER}", field: "users[0].user.auth-provider"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			remote := newFakeCluster(t) // same certificate as every httptest TLS server
			user := strings.ReplaceAll(tc.user, "SERVER", remote.srv.URL)
			key := createRemoteGitSync(t, c, ns, tc.name, kubeconfigYAML(remote.srv.URL, tc.cluster, user))
			waitRefusedOrReached(t, c, key, remote)
			if requests, authz := remote.seen(); len(requests) != 0 || len(authz) != 0 {
				t.Fatalf("remote saw requests %v with Authorization %v, want none", requests, authz)
			}
			waitStalledNaming(t, c, key, "Secret/"+ns+"/"+tc.name, tc.field)
		})
	}
}

// TestKubeconfigLoopbackServerRefused: without --allow-networks a server on
// loopback is refused before any connection, naming the field and the flag.
// How this was checked: with checkServers returning nil (and the dialer's
// policy check removed) the agent connects and the server records requests.
func TestKubeconfigLoopbackServerRefused(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns, strictEgress: true, allowLocalSources: true})
	remote := newFakeCluster(t)
	caData := "    certificate-authority-data: " + base64.StdEncoding.EncodeToString(remote.ca)
	key := createRemoteGitSync(t, c, ns, "loopback", kubeconfigYAML(remote.srv.URL, caData, "    token: inline-token"))
	waitRefusedOrReached(t, c, key, remote)
	if requests, _ := remote.seen(); len(requests) != 0 {
		t.Fatalf("remote saw requests %v, want none", requests)
	}
	waitStalledNaming(t, c, key, "clusters[0].cluster.server", "127.0.0.1 is a loopback address", "--allow-networks")
}

// TestRemoteRepliesNotQuoted: an accepted inline-token kubeconfig reaches a
// server that is no apiserver; what it answers (a Status message, an HTML
// page) never appears in the GitSync's conditions or Events, only the code,
// verb and path do. How this was checked: without the remoteResponses
// wrapper the Ready condition quotes the marker.
func TestRemoteRepliesNotQuoted(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	remote := newFakeCluster(t)
	caData := "    certificate-authority-data: " + base64.StdEncoding.EncodeToString(remote.ca)
	key := createRemoteGitSync(t, c, ns, "fake", kubeconfigYAML(remote.srv.URL, caData, "    token: inline-token"))
	gs := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionFalse, func(gs *v1.GitSync) bool {
		cond := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReady)
		return strings.Contains(cond.Message, "apply failed")
	})
	if cond := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReady); !strings.Contains(cond.Message, "remote cluster answered 403 Forbidden to GET /api") {
		t.Errorf("Ready message %q does not name the remote's code, verb and path", cond.Message)
	}
	if _, authz := remote.seen(); len(authz) == 0 || authz[0] != "Bearer inline-token" {
		t.Errorf("remote saw Authorization %v, want the kubeconfig's inline token", authz)
	}
	for _, cond := range gs.Status.Conditions {
		if strings.Contains(cond.Message, fakeClusterMarker) || strings.Contains(cond.Message, "secret-from-inside") {
			t.Errorf("condition %s quotes the remote's reply: %s", cond.Type, cond.Message)
		}
	}
	events := &corev1.EventList{}
	if err := c.List(context.Background(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if strings.Contains(e.Message, fakeClusterMarker) {
			t.Errorf("event %s quotes the remote's reply: %s", e.Name, e.Message)
		}
	}
}
