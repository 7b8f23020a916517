package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// forms returns the texts v can come back as in a message: v itself; the
// bodies of the string literals JSON and Go make of it (with and without
// HTML escapes, ASCII-only, upper- and lower-case \u escapes), and of those
// quoted once more (a JSON document quoted inside an error, a Go %q of an
// apiserver message); its base64 encodings; and every run of v of at least
// MinPartLength between two characters some of those forms escape.
func forms(v string) []string {
	out := []string{v}
	quoted := quotedForms(v)
	out = append(out, quoted...)
	for _, q := range quoted {
		if q != v {
			out = append(out, quotedForms(q)...)
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		out = append(out, enc.EncodeToString([]byte(v)))
	}
	return append(out, parts(v)...)
}

// quotedForms are the bodies (without the quotes) of the string literals
// that JSON encoders and Go's quoting make of v.
func quotedForms(v string) []string {
	goq := strconv.Quote(v)
	ascii := strconv.QuoteToASCII(v)
	out := []string{
		jsonBody(v, true), jsonBody(v, false),
		goq[1 : len(goq)-1], ascii[1 : len(ascii)-1],
		asciiJSON(jsonBody(v, false), "\\u%04x"), asciiJSON(jsonBody(v, false), "\\u%04X"),
	}
	return out
}

// jsonBody is v as encoding/json writes a string, without its quotes.
func jsonBody(v string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(v) // a string always encodes
	s := strings.TrimSuffix(b.String(), "\n")
	return s[1 : len(s)-1]
}

// asciiJSON replaces each non-ASCII rune of a JSON string body by its \u
// escape (a surrogate pair above the BMP), as ASCII-only encoders write it.
func asciiJSON(body, format string) string {
	var b strings.Builder
	for _, r := range body {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			fmt.Fprintf(&b, format, 0xD800+(r>>10))
			fmt.Fprintf(&b, format, 0xDC00+(r&0x3FF))
		default:
			fmt.Fprintf(&b, format, r)
		}
	}
	return b.String()
}

// parts returns the runs of v between escaped characters that are at least
// MinPartLength long; none when v has no such character.
func parts(v string) []string {
	fields := strings.FieldsFunc(v, escaped)
	if len(fields) == 1 && fields[0] == v {
		return nil
	}
	var out []string
	for _, f := range fields {
		if len(f) >= MinPartLength {
			out = append(out, f)
		}
	}
	return out
}

// escaped reports whether some form of a value changes r: quotes and
// backslashes, control characters, HTML's <, > and &, and every non-ASCII
// rune (escaped by ASCII-only forms).
func escaped(r rune) bool {
	switch {
	case r == '"', r == '\\', r == '\'', r == '<', r == '>', r == '&', r == '`':
		return true
	case r < 0x20, r == 0x7f, r >= utf8.RuneSelf:
		return true
	}
	return false
}
