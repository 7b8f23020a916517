package git

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/git/githubapp"
)

// Auth holds the credentials for one repository, usually read from the
// Secret named by spec.source.secretRef. Its values never appear in errors.
type Auth struct {
	// Username and Password are HTTPS basic auth (for most hosts the password
	// is a personal access token).
	Username, Password string
	// BearerToken is sent as "Authorization: Bearer"; it wins over Password.
	BearerToken string
	// CAData is a PEM bundle trusted in addition to the system roots, for Git
	// servers behind a private CA.
	CAData []byte
	// SSHPrivateKey is a PEM private key for ssh:// and scp-style URLs, with
	// SSHPassphrase when the key is encrypted.
	SSHPrivateKey, SSHPassphrase []byte
	// KnownHosts is a known_hosts file; ssh refuses hosts it does not list.
	KnownHosts []byte
	// InsecureSkipHostKeyCheck accepts any ssh host key. Only for tests and
	// throwaway setups: it lets anyone on the path impersonate the server.
	InsecureSkipHostKeyCheck bool
	// GitHubApp, when set, is a GitHub App whose installation token is the
	// password over HTTPS: UseGitHubApp mints it (user x-access-token).
	GitHubApp *githubapp.App

	// origin names where the credentials were read ("Secret/ns/name") and
	// originKeys the key names found there (names only, never values), so
	// a remote asking for credentials the Secret does not hold can be told
	// apart from one given none: see AuthFromSecret.
	origin     string
	originKeys []string
}

// Keys of a Secret holding Git credentials (a GitSync's
// spec.source.secretRef). Any other key is ignored.
const (
	SecretKeyUsername    = "username"
	SecretKeyPassword    = "password"
	SecretKeyBearerToken = "bearerToken"
	SecretKeyCA          = "ca.crt"
	SecretKeyIdentity    = "identity"
	SecretKeyPassphrase  = "passphrase"
	SecretKeyKnownHosts  = "known_hosts"
)

// AuthFromSecret reads the credentials held by a Secret's data under the
// SecretKey* names. name ("Secret/ns/name") and the key names present are
// remembered, so that when a remote asks for credentials and the Secret
// holds none under the names read, the failure is CredentialsUnrecognized
// naming the keys found and the keys expected.
func AuthFromSecret(name string, data map[string][]byte) *Auth {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	app, ok := githubapp.FromSecret(data)
	if ok {
		app.CAData = data[SecretKeyCA]
	}
	return &Auth{
		GitHubApp:     app,
		Username:      string(data[SecretKeyUsername]),
		Password:      string(data[SecretKeyPassword]),
		BearerToken:   string(data[SecretKeyBearerToken]),
		CAData:        data[SecretKeyCA],
		SSHPrivateKey: data[SecretKeyIdentity],
		SSHPassphrase: data[SecretKeyPassphrase],
		KnownHosts:    data[SecretKeyKnownHosts],
		origin:        name,
		originKeys:    keys,
	}
}

// sentCredentials says which credentials a request to an endpoint of
// protocol carries ("the username and password", "the bearer token", "the
// ssh key"), or "" when it carries none. userinfo reports credentials
// written into the URL itself.
func (a *Auth) sentCredentials(protocol string, userinfo bool) string {
	from := ""
	if a != nil && a.origin != "" {
		from = " from " + a.origin
	}
	switch {
	case protocol == "ssh" && a != nil && len(a.SSHPrivateKey) > 0:
		return "the ssh key" + from
	case protocol != "http" && protocol != "https":
		return ""
	case a != nil && a.GitHubApp != nil:
		return "the GitHub App " + a.GitHubApp.ID + " installation token" + from
	case a != nil && a.BearerToken != "":
		return "the bearer token" + from
	case a != nil && (a.Username != "" || a.Password != ""):
		return "the username and password" + from
	case userinfo:
		return "the credentials in the URL"
	}
	return ""
}

// missingCredentials describes a Secret that holds no credentials for
// protocol under the names read, naming the keys it has instead; "" when
// the credentials did not come from a Secret.
func (a *Auth) missingCredentials(protocol string) string {
	if a == nil || a.origin == "" {
		return ""
	}
	found := "it has no keys"
	if len(a.originKeys) > 0 {
		found = "its keys are " + strings.Join(a.originKeys, ", ")
	}
	want := fmt.Sprintf("%s and %s, or %s, or %s and %s", SecretKeyUsername, SecretKeyPassword, SecretKeyBearerToken,
		githubapp.SecretKeyAppID, githubapp.SecretKeyPrivateKey)
	if protocol == "ssh" {
		want = SecretKeyIdentity + " (the private key)"
	}
	return fmt.Sprintf("%s has no %s: %s", a.origin, want, found)
}

// secrets lists the credential strings that must be masked in any message.
func (a *Auth) secrets() []string {
	if a == nil {
		return nil
	}
	var out []string
	for _, s := range []string{a.Password, a.BearerToken, string(a.SSHPassphrase)} {
		if len(s) >= 4 {
			out = append(out, s)
		}
	}
	return out
}

// transportAuth turns Auth into go-git's AuthMethod for the endpoint's
// protocol. knownHostsDir is where KnownHosts is written for the parser.
func (a *Auth) transportAuth(ep *transport.Endpoint, knownHostsDir string) (transport.AuthMethod, error) {
	switch ep.Protocol {
	case "http", "https":
		return a.httpAuth(), nil
	case "ssh":
		return a.sshAuth(ep, knownHostsDir)
	}
	return nil, nil
}

func (a *Auth) httpAuth() transport.AuthMethod {
	switch {
	case a == nil:
		return nil
	case a.BearerToken != "":
		return &githttp.TokenAuth{Token: a.BearerToken}
	case a.Username != "" || a.Password != "":
		user := a.Username
		if user == "" {
			user = "git"
		}
		return &githttp.BasicAuth{Username: user, Password: a.Password}
	}
	return nil
}

// sshAuth builds public-key auth with strict host key checking: without
// KnownHosts (and without the explicit insecure flag) it refuses to connect.
func (a *Auth) sshAuth(ep *transport.Endpoint, knownHostsDir string) (transport.AuthMethod, error) {
	if a == nil || len(a.SSHPrivateKey) == 0 {
		if m := a.missingCredentials("ssh"); m != "" {
			return nil, &reasonError{class: errAuthFailed, reason: v1.ReasonCredentialsUnrecognized, msg: "an ssh URL needs a private key; " + m}
		}
		return nil, fmt.Errorf("ssh auth: a private key is required: %w", ErrInvalidSource)
	}
	user := ep.User
	if user == "" {
		user = "git"
	}
	pk, err := gitssh.NewPublicKeys(user, a.SSHPrivateKey, string(a.SSHPassphrase))
	if err != nil {
		// The parser's message never includes key material.
		return nil, fmt.Errorf("ssh auth: private key unusable: %v: %w", err, ErrInvalidSource)
	}
	if a.InsecureSkipHostKeyCheck {
		pk.HostKeyCallback = ssh.InsecureIgnoreHostKey()
		return pk, nil
	}
	if len(a.KnownHosts) == 0 {
		return nil, fmt.Errorf("ssh auth: known_hosts is required (or set the insecure flag): %w", ErrInvalidSource)
	}
	file, err := writeKnownHosts(knownHostsDir, a.KnownHosts)
	if err != nil {
		return nil, err
	}
	db, err := gitssh.NewKnownHostsDb(file)
	if err != nil {
		return nil, fmt.Errorf("ssh auth: known_hosts unreadable: %v: %w", err, ErrInvalidSource)
	}
	pk.HostKeyCallback = db.HostKeyCallback()
	// Offer only the key types known_hosts lists for this host, so the server
	// cannot pick an algorithm we have no key for and fail as "unknown key".
	pk.HostKeyAlgorithms = db.HostKeyAlgorithms(hostWithPort(ep))
	return pk, nil
}

func hostWithPort(ep *transport.Endpoint) string {
	port := ep.Port
	if port == 0 {
		port = 22
	}
	return net.JoinHostPort(ep.Host, fmt.Sprint(port))
}

// writeKnownHosts stores known_hosts content (public data) under a name
// derived from its digest, so equal contents share one file.
func writeKnownHosts(dir string, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	path := filepath.Join(dir, hex.EncodeToString(sum[:16]))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("known_hosts write failed: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("known_hosts write failed: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("known_hosts write failed: %w", firstErr(werr, cerr))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("known_hosts write failed: %w", err)
	}
	return path, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// redactSecrets masks credential URLs and the literal secrets in s.
func redactSecrets(s string, secrets []string) string {
	s = RedactText(s)
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, "***")
	}
	return s
}
