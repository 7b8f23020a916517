package docgen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps failures instead of reporting them.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}
func (r *recorder) Logf(string, ...any) {}

// TestCheckPage: a page that matches passes, a stale or missing one fails
// with the command that fixes it, and UpdateEnv rewrites it.
func TestCheckPage(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "page.md")
	if err := os.WriteFile(page, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(UpdateEnv, "")

	r := &recorder{TB: t}
	CheckPage(r, page, "page.md", []byte("one\ntwo\n"))
	if len(r.failures) != 0 {
		t.Errorf("a current page failed: %v", r.failures)
	}

	r = &recorder{TB: t}
	CheckPage(r, page, "page.md", []byte("one\nthree\n"))
	if len(r.failures) != 1 || !strings.Contains(r.failures[0], "page.md is stale: run `make docs`") || !strings.Contains(r.failures[0], "three") {
		t.Errorf("a stale page: want one failure naming make docs and the change, got %q", r.failures)
	}

	r = &recorder{TB: t}
	CheckPage(r, filepath.Join(dir, "missing.md"), "missing.md", []byte("x"))
	if len(r.failures) != 1 || !strings.Contains(r.failures[0], "make docs") {
		t.Errorf("a missing page: want one failure naming make docs, got %q", r.failures)
	}

	t.Setenv(UpdateEnv, "1")
	r = &recorder{TB: t}
	CheckPage(r, page, "page.md", []byte("one\nthree\n"))
	if b, _ := os.ReadFile(page); string(b) != "one\nthree\n" || len(r.failures) != 0 {
		t.Errorf("with %s set: page %q, failures %v; want it rewritten", UpdateEnv, b, r.failures)
	}
}
