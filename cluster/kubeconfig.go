package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/yaml"

	"gitsync.dev/gitsync/internal/egress"
)

// A spec.kubeConfig Secret is written by a tenant, and the agent reads it
// with its own identity and file system. So a kubeconfig must carry its
// credentials as data: inline token, client-certificate-data,
// client-key-data, certificate-authority-data, or username and password.
// Everything that would make the agent read a file (tokenFile,
// client-certificate, client-key, certificate-authority), run a program
// (exec, auth-provider) or connect somewhere other than the server it names
// (proxy-url) is refused, and so is a server on an address the egress
// policy denies. Otherwise a tenant could have the agent send its own
// ServiceAccount token (tokenFile: /var/run/secrets/...) to a host the
// tenant controls.

// KubeconfigError is a spec.kubeConfig Secret that is refused or malformed:
// no key, not a kubeconfig, a field naming a file, a program or a proxy, a
// server that is no http(s) URL or that the egress policy denies. It names
// the Secret and the field, never a value, and retrying the same Secret
// cannot fix it.
type KubeconfigError struct{ Err error }

func (e *KubeconfigError) Error() string { return e.Err.Error() }
func (e *KubeconfigError) Unwrap() error { return e.Err }

func invalid(err error) error { return &KubeconfigError{Err: err} }

// configFromSecret builds the rest.Config of the kubeconfig in key of s
// ("value" when empty), dialing only through dialer. A refused or malformed
// kubeconfig is a *KubeconfigError naming the field; a server whose name
// does not resolve is a plain error (it may resolve later).
func configFromSecret(ctx context.Context, s *corev1.Secret, key string, allowExec bool, dialer *egress.Dialer) (*rest.Config, error) {
	if key == "" {
		key = "value"
	}
	subject := fmt.Sprintf("Secret/%s/%s", s.Namespace, s.Name)
	data, ok := s.Data[key]
	if !ok {
		return nil, invalid(fmt.Errorf("%s has no key %q", subject, key))
	}
	raw, err := clientcmd.Load(data)
	if err != nil {
		return nil, invalid(fmt.Errorf("%s key %q is not a kubeconfig", subject, key))
	}
	order, err := kubeconfigOrder(data)
	if err != nil {
		return nil, invalid(fmt.Errorf("%s key %q is not a kubeconfig", subject, key))
	}
	if refused := refusedFields(raw, order, allowExec); len(refused) > 0 {
		return nil, invalid(fmt.Errorf("%s kubeconfig refused: %s; kubeconfig Secrets carry credentials inline only "+
			"(token, client-certificate-data, client-key-data, certificate-authority-data, username/password)",
			subject, strings.Join(refused, "; ")))
	}
	if err := checkServers(ctx, subject, raw, order, dialer); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, invalid(fmt.Errorf("%s kubeconfig invalid: %w", subject, err))
	}
	if cfg.BearerTokenFile != "" || cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" || cfg.AuthProvider != nil ||
		(cfg.ExecProvider != nil && !allowExec) {
		// Unreachable after refusedFields; kept so a new clientcmd field
		// cannot silently reintroduce a file reference.
		return nil, invalid(fmt.Errorf("%s kubeconfig refers to files or plugins", subject))
	}
	cfg.Dial = dialer.DialContext
	// An environment proxy would be dialed instead of the server, and the
	// egress check would judge the proxy.
	cfg.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return remoteResponses{next: rt} })
	return cfg, nil
}

// kubeconfigNames are the user and cluster names of a kubeconfig in file
// order, so a message can name "users[0].user.tokenFile" as written.
type kubeconfigNames struct{ users, clusters []string }

func kubeconfigOrder(data []byte) (kubeconfigNames, error) {
	var c clientcmdv1.Config
	if err := yaml.Unmarshal(data, &c); err != nil {
		return kubeconfigNames{}, err
	}
	var n kubeconfigNames
	for _, u := range c.AuthInfos {
		n.users = append(n.users, u.Name)
	}
	for _, cl := range c.Clusters {
		n.clusters = append(n.clusters, cl.Name)
	}
	return n, nil
}

// fieldPath names an entry by its position in the file, or by name when
// the two parsers disagree.
func fieldPath(list string, order []string, name, field string) string {
	for i, n := range order {
		if n == name {
			return fmt.Sprintf("%s[%d].%s.%s", list, i, strings.TrimSuffix(list, "s"), field)
		}
	}
	return fmt.Sprintf("%s[name=%s].%s.%s", list, name, strings.TrimSuffix(list, "s"), field)
}

// refusedFields lists every field of raw that refers to a file, a program or
// a proxy, in file order.
func refusedFields(raw *clientcmdapi.Config, order kubeconfigNames, allowExec bool) []string {
	var out []string
	for _, name := range inFileOrder(raw.AuthInfos, order.users) {
		ai := raw.AuthInfos[name]
		for _, f := range []struct {
			field string
			set   bool
			why   string
		}{
			{"tokenFile", ai.TokenFile != "", "names a file on the agent's disk"},
			{"client-certificate", ai.ClientCertificate != "", "names a file on the agent's disk"},
			{"client-key", ai.ClientKey != "", "names a file on the agent's disk"},
			{"exec", ai.Exec != nil && !allowExec, "runs a program in the agent (allowed only with gitsync run --allow-kubeconfig-exec)"},
			{"auth-provider", ai.AuthProvider != nil, "runs an auth provider plugin in the agent"},
		} {
			if f.set {
				out = append(out, fieldPath("users", order.users, name, f.field)+" "+f.why)
			}
		}
	}
	for _, name := range inFileOrder(raw.Clusters, order.clusters) {
		c := raw.Clusters[name]
		if c.CertificateAuthority != "" {
			out = append(out, fieldPath("clusters", order.clusters, name, "certificate-authority")+" names a file on the agent's disk")
		}
		if c.ProxyURL != "" {
			out = append(out, fieldPath("clusters", order.clusters, name, "proxy-url")+" sends the agent's connections through a proxy")
		}
	}
	return out
}

// inFileOrder returns m's keys in file order, then any the order misses.
func inFileOrder[T any](m map[string]T, order []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range order {
		if _, ok := m[n]; ok && !seen[n] {
			out = append(out, n)
			seen[n] = true
		}
	}
	for n := range m {
		if !seen[n] {
			out = append(out, n)
		}
	}
	return out
}

// checkServers refuses a cluster whose server is not an http(s) URL or whose
// host the egress policy denies; a name that does not resolve is retried.
func checkServers(ctx context.Context, subject string, raw *clientcmdapi.Config, order kubeconfigNames, dialer *egress.Dialer) error {
	for _, name := range inFileOrder(raw.Clusters, order.clusters) {
		field := subject + " kubeconfig " + fieldPath("clusters", order.clusters, name, "server")
		u, err := url.Parse(raw.Clusters[name].Server)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
			return invalid(fmt.Errorf("%s is not an http(s) URL", field))
		}
		if _, err := dialer.Resolve(ctx, u.Hostname()); err != nil {
			var denied *egress.DeniedError
			if errors.As(err, &denied) {
				return invalid(fmt.Errorf("%s refused: %w", field, err))
			}
			return fmt.Errorf("%s: %w", field, err)
		}
	}
	return nil
}
