package drift

import (
	"fmt"
	"strconv"
	"strings"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// AnyIndex in a pointer, in place of a list index, names every element of
// the list: gitsync's one extension of RFC 6901. On a map it is the key "*".
const AnyIndex = "*"

// Pointer is a parsed JSON pointer (RFC 6901), e.g. "/spec/replicas".
type Pointer struct {
	text   string
	tokens []string
}

// ParsePointer parses s. The empty pointer (the whole object) is refused:
// an object left alone whole is the gitsync.dev/apply annotation's job.
func ParsePointer(s string) (Pointer, error) {
	if s == "" {
		return Pointer{}, fmt.Errorf("pointer %q names the whole object (annotate the object %s: %s instead)", s, "gitsync.dev/apply", "disabled")
	}
	if !strings.HasPrefix(s, "/") {
		return Pointer{}, fmt.Errorf("pointer %q does not start with \"/\" (RFC 6901, e.g. /spec/replicas)", s)
	}
	parts := strings.Split(s[1:], "/")
	tokens := make([]string, len(parts))
	for i, p := range parts {
		t, err := unescape(p)
		if err != nil {
			return Pointer{}, fmt.Errorf("pointer %q: %w", s, err)
		}
		tokens[i] = t
	}
	if len(tokens) == 1 && (tokens[0] == "apiVersion" || tokens[0] == "kind" || tokens[0] == "metadata") {
		return Pointer{}, fmt.Errorf("pointer %q names the object's identity, which cannot be left alone", s)
	}
	if len(tokens) == 2 && tokens[0] == "metadata" && (tokens[1] == "name" || tokens[1] == "namespace") {
		return Pointer{}, fmt.Errorf("pointer %q names the object's identity, which cannot be left alone", s)
	}
	if len(tokens) >= 2 && tokens[0] == "metadata" && (tokens[1] == "labels" || tokens[1] == "annotations") &&
		(len(tokens) == 2 || strings.HasPrefix(tokens[2], v1.Group+"/")) {
		return Pointer{}, fmt.Errorf("pointer %q covers gitsync's own %s keys (owner labels, gitsync.dev/ annotations), which cannot be left alone; name the key", s, v1.Group)
	}
	return Pointer{text: s, tokens: tokens}, nil
}

// unescape decodes one reference token: "~1" is "/", "~0" is "~", and any
// other "~" is an error.
func unescape(t string) (string, error) {
	if !strings.Contains(t, "~") {
		return t, nil
	}
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		if t[i] != '~' {
			b.WriteByte(t[i])
			continue
		}
		if i+1 >= len(t) || (t[i+1] != '0' && t[i+1] != '1') {
			return "", fmt.Errorf("%q: \"~\" must be followed by 0 or 1", t)
		}
		if t[i+1] == '0' {
			b.WriteByte('~')
		} else {
			b.WriteByte('/')
		}
		i++
	}
	return b.String(), nil
}

// String returns the pointer as written.
func (p Pointer) String() string { return p.text }

// index parses a token as a list index of a list of n elements: a
// non-negative decimal without leading zeros, below n.
func index(token string, n int) (int, bool) {
	if token == "" || (len(token) > 1 && token[0] == '0') {
		return 0, false
	}
	i, err := strconv.Atoi(token)
	if err != nil || i < 0 || i >= n {
		return 0, false
	}
	return i, true
}

// concrete expands the pointer over obj: every path of list indices and
// map keys it names that exists in obj, with AnyIndex replaced by each
// index of its list. A pointer into a field obj lacks expands to nothing.
func (p Pointer) concrete(obj map[string]any) [][]string {
	var out [][]string
	var walk func(v any, i int, path []string)
	walk = func(v any, i int, path []string) {
		if i == len(p.tokens) {
			out = append(out, append([]string(nil), path...))
			return
		}
		t := p.tokens[i]
		switch v := v.(type) {
		case map[string]any:
			if child, ok := v[t]; ok {
				walk(child, i+1, append(path, t))
			}
		case []any:
			if t == AnyIndex {
				for j := range v {
					walk(v[j], i+1, append(path, strconv.Itoa(j)))
				}
				return
			}
			if j, ok := index(t, len(v)); ok {
				walk(v[j], i+1, append(path, t))
			}
		}
	}
	walk(obj, 0, nil)
	return out
}
