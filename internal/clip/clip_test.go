package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTo: short text is kept, long text is cut to n bytes at a rune
// boundary and marked, never leaving half a rune.
func TestTo(t *testing.T) {
	if got := To("short", 10); got != "short" {
		t.Errorf("short text changed: %q", got)
	}
	for _, s := range []string{strings.Repeat("a", 50), strings.Repeat("é", 50), strings.Repeat("日本", 20)} {
		for n := 0; n < len(s); n++ {
			got := To(s, n)
			if !utf8.ValidString(got) || !strings.HasSuffix(got, Ellipsis) || (n >= len(Ellipsis) && len(got) > n) {
				t.Fatalf("To(%q, %d) = %q", s, n, got)
			}
		}
	}
}
