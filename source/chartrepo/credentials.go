package chartrepo

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Keys of a repository's Secret.
const (
	SecretKeyUsername     = "username"
	SecretKeyPassword     = "password"
	SecretKeyDockerConfig = ".dockerconfigjson"
)

// FromSecret reads the credentials for repo from a Secret's data: username
// and password, or for an oci:// repository a docker config
// (.dockerconfigjson) entry of its host. from names the Secret in messages;
// no value ever appears in one.
func FromSecret(repo, from string, data map[string][]byte) (Repository, error) {
	r := Repository{URL: repo}
	if u, ok := data[SecretKeyUsername]; ok {
		p, ok := data[SecretKeyPassword]
		if !ok {
			return r, fmt.Errorf("%s has key %s but not %s", from, SecretKeyUsername, SecretKeyPassword)
		}
		r.Username, r.Password = string(u), string(p)
		return r, nil
	}
	if cfg, ok := data[SecretKeyDockerConfig]; ok {
		host, isOCI := ociHost(repo)
		if !isOCI {
			return r, fmt.Errorf("%s is a docker config, which only an oci:// repository reads; %s is not one", from, repo)
		}
		u, p, found, err := DockerConfigAuth(cfg, host)
		if err != nil {
			return r, fmt.Errorf("%s key %s: %w", from, SecretKeyDockerConfig, err)
		}
		if !found {
			return r, fmt.Errorf("%s key %s has no entry for %s", from, SecretKeyDockerConfig, host)
		}
		r.Username, r.Password = u, p
		return r, nil
	}
	return r, fmt.Errorf("%s has neither keys %s and %s nor %s", from, SecretKeyUsername, SecretKeyPassword, SecretKeyDockerConfig)
}

// DockerConfigAuth finds host's credentials in a docker config file
// ({"auths": {host: {"auth": base64(user:password)} or {"username",
// "password"}}}), the format of .dockerconfigjson Secrets and of Helm's
// registry configuration. Entries written as URLs (https://host/v1/) match
// their host.
func DockerConfigAuth(data []byte, host string) (user, password string, found bool, err error) {
	repos, err := DockerConfigRepositories(data)
	if err != nil {
		return "", "", false, err
	}
	for _, r := range repos {
		if h, _ := ociHost(r.URL); h == host {
			return r.Username, r.Password, true, nil
		}
	}
	return "", "", false, nil
}

// DockerConfigRepositories are the entries of a docker config file as
// oci:// repositories of their hosts.
func DockerConfigRepositories(data []byte) ([]Repository, error) {
	var cfg struct {
		Auths map[string]struct {
			Auth     string `json:"auth"`
			Username string `json:"username"`
			Password string `json:"password"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("not a docker config: %w", err)
	}
	var out []Repository
	for key, a := range cfg.Auths {
		host := registryHost(key)
		r := Repository{URL: "oci://" + host, Username: a.Username, Password: a.Password}
		if a.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return nil, fmt.Errorf("the entry of %s has an auth that is not base64", host)
			}
			u, p, ok := strings.Cut(string(raw), ":")
			if !ok {
				return nil, fmt.Errorf("the entry of %s has an auth that is not user:password", host)
			}
			r.Username, r.Password = u, p
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Repository) int { return strings.Compare(a.URL, b.URL) })
	return out, nil
}

// registryHost is the host of a docker config key: "host", "host:port" or
// a URL such as https://index.docker.io/v1/.
func registryHost(key string) string {
	if _, rest, ok := strings.Cut(key, "://"); ok {
		key = rest
	}
	host, _, _ := strings.Cut(key, "/")
	return host
}
