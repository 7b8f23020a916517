package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gitsync.dev/gitsync/internal/egress"
)

func kubeconfigSecret(server, cluster, user string) *corev1.Secret {
	data := fmt.Sprintf(`apiVersion: v1
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
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "remote"}, Data: map[string][]byte{"value": []byte(data)}}
}

// TestKubeconfigRefusals: a kubeconfig naming a file, a program or a proxy,
// or a server the egress policy denies, is a *KubeconfigError naming the
// Secret and the field as written; an inline token on an allowed server
// is a config that dials only through the egress dialer.
//
// Checked by letting refusedFields return nothing: tokenFile and
// certificate-authority pass (clientcmd accepts them).
func TestKubeconfigRefusals(t *testing.T) {
	loopback := &egress.Dialer{Policy: egress.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}}
	const server = "https://127.0.0.1:6443"
	for _, tc := range []struct {
		name, cluster, user string
		dialer              *egress.Dialer
		want                string // "" means accepted
	}{
		{"token file", "", "    tokenFile: /var/run/secrets/token", loopback, "users[0].user.tokenFile names a file"},
		{"ca file", "    certificate-authority: /etc/ca.crt", "    token: x", loopback, "clusters[0].cluster.certificate-authority names a file"},
		{"exec", "", "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh", loopback, "users[0].user.exec runs a program"},
		{"proxy", "    proxy-url: http://10.0.0.1:3128", "    token: x", loopback, "clusters[0].cluster.proxy-url"},
		{"loopback denied", "", "    token: x", &egress.Dialer{}, "clusters[0].cluster.server refused"},
		{"inline token", "", "    token: x", loopback, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := configFromSecret(context.Background(), kubeconfigSecret(server, tc.cluster, tc.user), "", false, tc.dialer)
			if tc.want == "" {
				if err != nil || cfg.BearerToken != "x" || cfg.Dial == nil {
					t.Fatalf("configFromSecret = %+v, %v; want the inline token, dialing through the egress dialer", cfg, err)
				}
				return
			}
			var ke *KubeconfigError
			if !errors.As(err, &ke) || !strings.Contains(err.Error(), "Secret/team/remote") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("configFromSecret = %v; want a KubeconfigError naming Secret/team/remote and %q", err, tc.want)
			}
		})
	}
}

// TestRemoteResponsesSanitized: a remote server's error body and a
// successful reply that is no Kubernetes object never reach the caller;
// the code, verb and path do.
func TestRemoteResponsesSanitized(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api" {
			http.Error(w, "internal-secret-page", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"internal":"internal-secret-json"}`)
	}))
	defer srv.Close()
	rt := remoteResponses{next: http.DefaultTransport}
	for path, want := range map[string]string{
		"/api":   "remote cluster answered 403 Forbidden to GET /api",
		"/other": "remote cluster answered a reply that is not a Kubernetes object to GET /other",
	} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != want || strings.Contains(string(body), "internal-secret") {
			t.Errorf("GET %s answered %q, want %q", path, body, want)
		}
	}
}
