package commitstatus

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRepository(t *testing.T) {
	tests := []struct {
		url  string
		want Repository
		bad  bool
	}{
		{url: "https://github.com/acme/app.git", want: Repository{Host: "github.com", Path: "acme/app"}},
		{url: "https://github.com/acme/app/", want: Repository{Host: "github.com", Path: "acme/app"}},
		{url: "https://user:pw@git.example.com:8443/acme/app", want: Repository{Host: "git.example.com:8443", Path: "acme/app"}},
		{url: "ssh://git@gitlab.example.com:2222/group/sub/app.git", want: Repository{Host: "gitlab.example.com", Path: "group/sub/app"}},
		{url: "git@github.com:acme/app.git", want: Repository{Host: "github.com", Path: "acme/app"}},
		{url: "github.com:acme/app", want: Repository{Host: "github.com", Path: "acme/app"}},
		{url: "file:///srv/git/acme/app.git", want: Repository{Path: "srv/git/acme/app"}},
		{url: "https://github.com/", bad: true},
		{url: "https://github.com/acme/../admin", bad: true},
		{url: "https://github.com/acme//app", bad: true},
		{url: "/srv/git/app", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			got, err := ParseRepository(tc.url)
			if tc.bad {
				if err == nil {
					t.Fatalf("ParseRepository = %+v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestAPIBase(t *testing.T) {
	tests := []struct {
		provider, url, want string
	}{
		{"github", "https://github.com/a/b", "https://api.github.com"},
		{"github", "git@ghe.example.com:a/b.git", "https://ghe.example.com/api/v3"},
		{"gitlab", "https://gitlab.com/g/s/p", "https://gitlab.com/api/v4"},
		{"gitlab", "ssh://git@gitlab.example.com:2222/g/p.git", "https://gitlab.example.com/api/v4"},
		{"gitea", "https://gitea.example.com:3000/a/b", "https://gitea.example.com:3000/api/v1"},
		{"bitbucket", "git@bitbucket.org:ws/r.git", "https://api.bitbucket.org/2.0"},
	}
	for _, tc := range tests {
		t.Run(tc.provider+" "+tc.url, func(t *testing.T) {
			r, err := ParseRepository(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			got, err := apiBase(tc.provider, r, "")
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("apiBase = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://user:tok@h/a%zz": "https://h/a%zz",
		"https://tok@h":           "https://h",
		"git@h:a/b":               "git@h:a/b",
	} {
		if got := redactURL(raw); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}
