package docgen

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

var mdLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// Slug is the anchor GitHub gives a heading: formatting and punctuation
// dropped, lower case, spaces as hyphens.
func Slug(heading string) string {
	heading = mdLink.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors lists the anchors of a Markdown page's headings, duplicates
// numbered as GitHub numbers them (x, x-1, x-2), plus explicit
// <a name="..."> and id="..." anchors.
func anchors(page string) map[string]bool {
	out := map[string]bool{}
	count := map[string]int{}
	for _, line := range proseLinesNumbered(page) {
		if m := htmlAnchor.FindAllStringSubmatch(line, -1); m != nil {
			for _, a := range m {
				out[a[1]] = true
			}
		}
		t := strings.TrimLeft(line, " ")
		if !strings.HasPrefix(t, "#") {
			continue
		}
		text := strings.TrimLeft(t, "#")
		if len(t)-len(text) > 6 || (text != "" && text[0] != ' ') {
			continue
		}
		s := Slug(strings.TrimSpace(strings.TrimRight(strings.TrimSpace(text), "#")))
		if n := count[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		count[s]++
	}
	return out
}

var htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
