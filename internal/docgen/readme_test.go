package docgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeIsALandingPage: the README stays short, and its first commands
// are the two a newcomer runs.
func TestReadmeIsALandingPage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 250 {
		t.Errorf("README.md has %d lines; keep it a landing page (at most 250) and move the rest to docs/", n)
	}
	var cmds []string
	for _, line := range firstCodeBlock(string(b)) {
		if strings.HasPrefix(line, "make ") {
			cmds = append(cmds, strings.Fields(line)[1])
		}
	}
	if len(cmds) < 2 || cmds[0] != "demo" || cmds[1] != "test" {
		t.Errorf("README.md's first commands are %v, want make demo, then make test", cmds)
	}
}

// firstCodeBlock is the lines of the first fenced code block of page.
func firstCodeBlock(page string) []string {
	_, rest, ok := strings.Cut(page, "```")
	if !ok {
		return nil
	}
	_, rest, _ = strings.Cut(rest, "\n")
	block, _, _ := strings.Cut(rest, "```")
	return strings.Split(block, "\n")
}
