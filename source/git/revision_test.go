package git

import "testing"

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
