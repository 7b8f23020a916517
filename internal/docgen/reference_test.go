package docgen

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the repository's top directory, seen from this package.
const repoRoot = "../.."

// TestAPIReference fails when docs/reference/gitsync-api.md differs from a
// fresh render of api/v1alpha1 (`make docs` rewrites it).
func TestAPIReference(t *testing.T) {
	fresh, err := APIReference(filepath.Join(repoRoot, "api", "v1alpha1"), "api/v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	CheckPage(t, filepath.Join(repoRoot, "docs", "reference", "gitsync-api.md"), "docs/reference/gitsync-api.md", fresh)
}

// TestDocsLinks fails on any relative link in the repository's Markdown
// pages that points at a missing file or heading.
func TestDocsLinks(t *testing.T) {
	files, err := MarkdownFiles(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"README.md", "docs/README.md"} {
		if !slices.Contains(files, want) {
			t.Fatalf("MarkdownFiles lacks %s: %v", want, files)
		}
	}
	for _, err := range CheckLinks(repoRoot, files) {
		t.Error(err)
	}
}

// TestAnnotationsPageNamesEveryKey: each gitsync.dev/ key the API package
// defines for objects is explained on docs/reference/annotations.md.
func TestAnnotationsPageNamesEveryKey(t *testing.T) {
	pkg, err := parseAPI(filepath.Join(repoRoot, "api", "v1alpha1"))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(repoRoot, "docs", "reference", "annotations.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, block := range pkg.consts {
		for _, c := range block.consts {
			if !strings.HasPrefix(c.value, "gitsync.dev/") || strings.HasPrefix(c.name, "Index") { // field indexes live in the agent's memory
				continue
			}
			n++
			if !strings.Contains(string(page), "`"+c.value+"`") {
				t.Errorf("docs/reference/annotations.md does not explain %s (%s)", c.value, c.name)
			}
		}
	}
	if n < 10 {
		t.Errorf("found only %d gitsync.dev/ keys in api/v1alpha1; is the parser still reading keys.go?", n)
	}
}
