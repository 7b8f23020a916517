package docgen

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCheckLinks: every broken relative link of the fixture is reported with
// its file and line, and nothing else.
func TestCheckLinks(t *testing.T) {
	files, err := MarkdownFiles("testdata/links")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"README.md", "docs/guide.md"}, files); diff != "" {
		t.Fatalf("MarkdownFiles (-want +got):\n%s", diff)
	}
	var got []string
	for _, err := range CheckLinks("testdata/links", files) {
		got = append(got, err.Error())
	}
	want := []string{
		"README.md:7: link docs/missing.md: no such file or directory",
		"README.md:8: link docs/guide.md#no-such-heading: docs/guide.md has no heading #no-such-heading",
		"README.md:14: link ../../outside.md: leaves the repository",
		"docs/guide.md:11: link guides/missing.md: no such file or directory",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CheckLinks (-want +got):\n%s", diff)
	}
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Install on your cluster", "install-on-your-cluster"},
		{"The GitSync resource (`gitsync.dev/v1alpha1`)", "the-gitsync-resource-gitsyncdevv1alpha1"},
		{"Encrypted Secrets (SOPS)", "encrypted-secrets-sops"},
		{"gitsync diff --gitsync", "gitsync-diff---gitsync"},
		{"A [link](x.md) in it", "a-link-in-it"},
		{"Hosts: GitHub, GitLab & Gitea", "hosts-github-gitlab--gitea"},
	} {
		t.Run(fmt.Sprint(tc.heading), func(t *testing.T) {
			if got := Slug(tc.heading); got != tc.want {
				t.Errorf("Slug(%q) = %q, want %q", tc.heading, got, tc.want)
			}
		})
	}
}
