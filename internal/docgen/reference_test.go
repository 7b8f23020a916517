package docgen

import (
	"path/filepath"
	"slices"
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
