package git

import (
	"strings"
	"testing"
)

func TestParseRevision(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	dig := sha + sha[:24]
	tests := []struct {
		name string
		in   string
		want Revision
		ok   bool
	}{
		{"branch", "main@sha1:" + sha, Revision{Ref: "main", Commit: sha}, true},
		{"tag with a slash", "release/v1.2@sha1:" + sha, Revision{Ref: "release/v1.2", Commit: sha}, true},
		{"pinned commit", "sha1:" + sha, Revision{Commit: sha}, true},
		{"empty", "", Revision{}, false},
		{"no commit", "main@sha1:", Revision{}, false},
		{"no marker", "main@" + sha, Revision{}, false},
		{"ref without @", "mainsha1:" + sha, Revision{}, false},
		{"two markers", "sha1:a@sha1:" + sha, Revision{}, false},
		{"artifact tag", "v1.2.0@sha256:" + dig, Revision{Ref: "v1.2.0", Digest: "sha256:" + dig}, true},
		{"artifact digest", "sha256:" + dig, Revision{Digest: "sha256:" + dig}, true},
		{"artifact without digest", "v1@sha256:", Revision{}, false},
		{"artifact ref without @", "v1sha256:" + dig, Revision{}, false},
		{"both markers", "sha1:" + sha + "@sha256:" + dig, Revision{}, false},
		{"commit and chart", "main@sha1:" + sha + "+chart:podinfo@6.5.0@sha256:" + dig,
			Revision{Ref: "main", Commit: sha, Chart: "podinfo@6.5.0@sha256:" + dig}, true},
		{"chart without a commit", "+chart:podinfo@6.5.0@sha256:" + dig, Revision{}, false},
		{"commit and an empty chart", "main@sha1:" + sha + "+chart:", Revision{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseRevision(tt.in)
			if ok != tt.ok || got != tt.want {
				t.Errorf("ParseRevision(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
			}
			if ok && got.String() != tt.in {
				t.Errorf("String() of the parsed revision = %q, want %q back", got.String(), tt.in)
			}
		})
	}
}

// TestRevisionIDNamesTheChart: a new chart version over the same commit is
// other content (stalled renders and health waits are remembered per ID).
func TestRevisionIDNamesTheChart(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	a := Revision{Commit: sha, Chart: "podinfo@6.5.0@sha256:aa"}
	b := Revision{Commit: sha, Chart: "podinfo@6.5.1@sha256:bb"}
	if a.ID() == b.ID() || a.ID() == (Revision{Commit: sha}).ID() {
		t.Errorf("IDs %q, %q and %q: a chart of its own is content of its own", a.ID(), b.ID(), Revision{Commit: sha}.ID())
	}
}

func TestShortRevision(t *testing.T) {
	commit := strings.Repeat("a", 40)
	for in, want := range map[string]string{
		"":                        "<none>",
		"main@sha1:" + commit:     "main@sha1:aaaaaaaaaaaa",
		"sha1:" + commit:          "sha1:aaaaaaaaaaaa",
		"v1.2.0@sha1:0123":        "v1.2.0@sha1:0123",
		"something-else-entirely": "something-else-entirely",
	} {
		if got := ShortRevision(in); got != want {
			t.Errorf("ShortRevision(%q) = %q, want %q", in, got, want)
		}
	}
}
