package ignore

import "testing"

func TestIgnored(t *testing.T) {
	type file struct{ dir, text string }
	tests := []struct {
		name  string
		opts  Options
		files []file
		path  string
		isDir bool
		want  bool
	}{
		{name: "plain manifest is read", path: "apps/web/deploy.yaml", want: false},
		{name: "dot directory by default", path: ".github", isDir: true, want: true},
		{name: "dot file deep by default", path: "apps/.gitlab-ci.yml", want: true},
		{name: "CI file by default", path: "azure-pipelines.yml", want: true},
		{name: "CI file deep by default", path: "apps/web/skaffold.yaml", want: true},
		{name: "values.yaml is not a default", path: "apps/values.yaml", want: false},
		{name: "no defaults", opts: Options{NoDefaults: true}, path: "renovate.json", want: false},
		{
			name:  "root file ignores anywhere",
			files: []file{{"", "*.draft.yaml\n"}},
			path:  "apps/web/x.draft.yaml", want: true,
		},
		{
			name:  "root file anchored pattern",
			files: []file{{"", "/docs/\n"}},
			path:  "docs", isDir: true, want: true,
		},
		{
			name:  "anchored pattern does not match deeper",
			files: []file{{"", "/docs/\n"}},
			path:  "apps/docs", isDir: true, want: false,
		},
		{
			name:  "dir-only pattern does not match a file",
			files: []file{{"", "docs/\n"}},
			path:  "apps/docs", want: false,
		},
		{
			name:  "subdirectory file is scoped to its directory",
			files: []file{{"apps/web", "values.yaml\n"}},
			path:  "apps/api/values.yaml", want: false,
		},
		{
			name:  "subdirectory file applies below it",
			files: []file{{"apps/web", "values.yaml\n"}},
			path:  "apps/web/env/values.yaml", want: true,
		},
		{
			name:  "negation re-includes a default",
			files: []file{{"", "!renovate.json\n"}},
			path:  "renovate.json", want: false,
		},
		{
			name:  "deeper file overrides the root file",
			files: []file{{"", "*.json\n"}, {"apps", "!crd.json\n"}},
			path:  "apps/crd.json", want: false,
		},
		{
			name:  "comments, blanks and CRLF",
			files: []file{{"", "# a comment\r\n\r\nnotes.yaml\r\n"}},
			path:  "notes.yaml", want: true,
		},
		{
			name:  "escaped hash is a pattern",
			files: []file{{"", "\\#odd.yaml\n"}},
			path:  "#odd.yaml", want: true,
		},
		{
			name:  "extra lines win over the repository",
			opts:  Options{Extra: "!keep.yaml\n"},
			files: []file{{"", "keep.yaml\n"}},
			path:  "keep.yaml", want: false,
		},
		{
			name: "extra lines are matched from the root",
			opts: Options{Extra: "/apps/web/tests/\n"},
			path: "apps/web/tests", isDir: true, want: true,
		},
		{
			name:  "extra lines win over later files",
			opts:  Options{Extra: "secret-*.yaml\n"},
			files: []file{{"apps", "!secret-a.yaml\n"}},
			path:  "apps/secret-a.yaml", want: true,
		},
		{name: "root itself is never ignored", opts: Options{Extra: "*\n"}, path: ".", isDir: true, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(tt.opts)
			for _, f := range tt.files {
				r = r.With(f.dir, []byte(f.text))
			}
			if got := r.Ignored(tt.path, tt.isDir); got != tt.want {
				t.Errorf("Ignored(%q, %v) = %v, want %v", tt.path, tt.isDir, got, tt.want)
			}
		})
	}
}

func TestWithLeavesParentUnchanged(t *testing.T) {
	root := New(Options{})
	child := root.With("a", []byte("x.yaml\n"))
	sibling := root.With("b", []byte("y.yaml\n"))
	if root.Ignored("a/x.yaml", false) || root.Ignored("b/y.yaml", false) {
		t.Error("parent rules changed by With")
	}
	if !child.Ignored("a/x.yaml", false) || child.Ignored("b/y.yaml", false) {
		t.Error("child rules wrong")
	}
	if !sibling.Ignored("b/y.yaml", false) || sibling.Ignored("a/x.yaml", false) {
		t.Error("sibling sees the other directory's rules")
	}
}

func TestDigest(t *testing.T) {
	a := Digest(Options{Extra: "x\n"})
	if a != Digest(Options{Extra: "x\n"}) {
		t.Error("equal options, different digests")
	}
	if a == Digest(Options{Extra: "y\n"}) || a == Digest(Options{Extra: "x\n", NoDefaults: true}) {
		t.Error("different options, equal digests")
	}
}
