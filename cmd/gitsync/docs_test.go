package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gitsync.dev/gitsync/internal/docgen"
)

// docsTests are the tests of this package that need neither the control
// plane nor the built binary: `go test -run` naming only these (as `make
// docs` does) starts neither.
var docsTests = []string{"TestCLIReference", "TestOnlyDocsTests"}

// TestCLIReference fails when docs/reference/cli.md differs from a fresh
// render of the command tree (`make docs` rewrites it).
func TestCLIReference(t *testing.T) {
	fresh := cliReference()
	for _, machine := range machinePaths(t) {
		if strings.Contains(string(fresh), machine) {
			t.Errorf("the CLI reference contains %q, a path of this machine: declare that flag's default as \"\" and say what it means in its usage", machine)
		}
	}
	docgen.CheckPage(t, filepath.Join("..", "..", "docs", "reference", "cli.md"), "docs/reference/cli.md", fresh)
}

// cliReference renders the tree a user runs, cobra's default completion
// command included (cobra adds it on Execute).
func cliReference() []byte {
	root := newRootCmd()
	root.InitDefaultCompletionCmd()
	return docgen.CLIReference(root, "cmd/gitsync")
}

// machinePaths are directories whose names would make a page depend on the
// machine it was generated on.
func machinePaths(t *testing.T) []string {
	t.Helper()
	var out []string
	if home, err := os.UserHomeDir(); err == nil && len(home) > 1 {
		out = append(out, home)
	}
	if cache, err := os.UserCacheDir(); err == nil {
		out = append(out, cache)
	}
	if wd, err := os.Getwd(); err == nil {
		out = append(out, wd)
	}
	return append(out, os.TempDir())
}

// onlyDocsTests reports whether the -run pattern selects nothing but
// docsTests, each alternative of it naming one of them.
func onlyDocsTests(run string) bool {
	if run == "" {
		return false
	}
	for _, alt := range strings.Split(run, "|") {
		alt = strings.Trim(alt, "^$()")
		if !slices.Contains(docsTests, alt) {
			return false
		}
	}
	return true
}

func TestOnlyDocsTests(t *testing.T) {
	for _, tc := range []struct {
		run  string
		want bool
	}{
		{"", false},
		{"TestCLIReference", true},
		{"^TestCLIReference$", true},
		{"^(TestCLIReference|TestOnlyDocsTests)$", true},
		{"TestCLIReference|TestHelp", false},
		{"TestHelp", false},
		{".", false},
	} {
		if got := onlyDocsTests(tc.run); got != tc.want {
			t.Errorf("onlyDocsTests(%q) = %v, want %v", tc.run, got, tc.want)
		}
	}
}
