package chartrepo

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestFromSecret: username/password for any repository; a docker config
// entry of the registry's host (as "host", or a URL) for oci://; anything
// else a message naming the Secret and keys, never a value.
func TestFromSecret(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("robot:pw-from-auth"))
	docker := []byte(`{"auths": {"https://registry.example.com/v1/": {"auth": "` + auth + `"}, "other.example.com": {"username": "u", "password": "pw-other"}}}`)
	for _, tc := range []struct {
		name, repo string
		data       map[string][]byte
		user, pw   string
		err        string
	}{
		{name: "basic", repo: "https://charts.example.com", data: map[string][]byte{"username": []byte("a"), "password": []byte("pw-basic")}, user: "a", pw: "pw-basic"},
		{name: "username without password", repo: "https://charts.example.com", data: map[string][]byte{"username": []byte("a")}, err: "has key username but not password"},
		{name: "docker config auth", repo: "oci://registry.example.com/charts", data: map[string][]byte{".dockerconfigjson": docker}, user: "robot", pw: "pw-from-auth"},
		{name: "docker config fields", repo: "oci://other.example.com/x", data: map[string][]byte{".dockerconfigjson": docker}, user: "u", pw: "pw-other"},
		{name: "docker config without the host", repo: "oci://third.example.com/x", data: map[string][]byte{".dockerconfigjson": docker}, err: "no entry for third.example.com"},
		{name: "docker config for http", repo: "https://charts.example.com", data: map[string][]byte{".dockerconfigjson": docker}, err: "only an oci:// repository"},
		{name: "no keys", repo: "https://charts.example.com", data: map[string][]byte{"token": []byte("pw-token")}, err: "has neither keys username and password nor .dockerconfigjson"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := FromSecret(tc.repo, "Secret/ns/creds", tc.data)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "Secret/ns/creds") || strings.Contains(err.Error(), "pw-") {
					t.Fatalf("err = %v, want one naming the Secret with %q and no value", err, tc.err)
				}
				return
			}
			if err != nil || r.Username != tc.user || r.Password != tc.pw || r.URL != tc.repo {
				t.Fatalf("got %+v, %v; want %s / %s", r, err, tc.user, tc.pw)
			}
		})
	}
}

// TestAccessMatches: HTTP credentials match the URL (a trailing slash
// aside), OCI ones the host; keys differ by credentials, not by who asks.
func TestAccessMatches(t *testing.T) {
	acc := Access{Repositories: []Repository{
		{URL: "https://charts.example.com/stable/", Username: "a", Password: "1"},
		{URL: "oci://registry.example.com", Username: "b", Password: "2"},
	}}
	for repo, want := range map[string]string{
		"https://charts.example.com/stable":     "a",
		"https://charts.example.com/other":      "",
		"oci://registry.example.com/charts/app": "b",
		"oci://evil.example.com/charts":         "",
	} {
		r, _ := acc.forURL(repo)
		if r.Username != want {
			t.Errorf("%s: credentials of %q, want %q", repo, r.Username, want)
		}
	}
	if acc.Key("https://charts.example.com/other") != (Access{}).Key("https://charts.example.com/other") {
		t.Error("a repository without credentials keys differently for two callers")
	}
	other := Access{Repositories: []Repository{{URL: "oci://registry.example.com", Username: "b", Password: "3"}}}
	if acc.Key("oci://registry.example.com/x") == other.Key("oci://registry.example.com/x") {
		t.Error("other credentials share a key")
	}
}
