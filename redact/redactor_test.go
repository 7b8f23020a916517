package redact

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"testing"
)

// The values a tenant's Secret may hold: each is masked in every message
// form below.
var values = map[string]string{
	"plain":        "s3cr3t-p4ssw0rd",
	"quote":        `pa"ss"word-1234`,
	"newline":      "first-line\nsecond-line\n",
	"backslash":    `C:\secrets\token-9876`,
	"non-ascii":    "mötley-crüe-🔑-key",
	"html":         "<tag>&amp;value</tag>",
	"control":      "tab\there\x01and\x7fthere",
	"only escapes": `"\"\\` + "\n\t" + `"\"\\`,
}

// messages echo v the ways the agent's inputs do: an apiserver refusal
// quoting it, a JSON document carrying it, that document quoted again, our
// own %q and %+q, and a base64 form.
var messages = map[string]func(v string) string{
	"raw": func(v string) string { return "value " + v + " refused" },
	"go quote": func(v string) string {
		return fmt.Sprintf("metadata.labels: Invalid value: %q: must be no more than 63 characters", v)
	},
	"go ascii": func(v string) string { return fmt.Sprintf("got %+q", v) },
	"json":     func(v string) string { b, _ := json.Marshal(map[string]string{"k": v}); return string(b) },
	"json in json": func(v string) string {
		b, _ := json.Marshal(map[string]string{"k": v})
		return strconv.Quote(string(b))
	},
	"json in json by json": func(v string) string {
		b, _ := json.Marshal(map[string]string{"k": v})
		c, _ := json.Marshal(map[string]string{"message": string(b)})
		return string(c)
	},
	"base64": func(v string) string { return "data: " + base64.StdEncoding.EncodeToString([]byte(v)) },
	"ascii json": func(v string) string {
		return `{"k":"` + asciiJSON(jsonBody(v, false), "\\u%04x") + `"}`
	},
}

func TestStringMasksEveryForm(t *testing.T) {
	for vname, v := range values {
		for mname, msg := range messages {
			t.Run(vname+"/"+mname, func(t *testing.T) {
				r := New()
				r.Add(v)
				in := msg(v)
				got := r.String(in)
				if !strings.Contains(got, Mask) {
					t.Fatalf("String(%q) = %q: nothing masked", in, got)
				}
				for _, leak := range leaks(v) {
					if strings.Contains(got, leak) {
						t.Errorf("String(%q) = %q still holds %q", in, got, leak)
					}
				}
			})
		}
	}
}

// leaks are the pieces of v that must not survive: v itself and each run
// of it long enough to be masked alone.
func leaks(v string) []string {
	out := []string{v}
	for _, p := range strings.FieldsFunc(v, escaped) {
		if len(p) >= MinPartLength {
			out = append(out, p)
		}
	}
	return out
}

func TestStringMasksPartsAroundAnEscape(t *testing.T) {
	r := New()
	r.Add("alpha-bravo\"charlie-delta")
	// A message that escaped the quote its own way (YAML, a shell) still
	// holds both halves.
	got := r.String(`value 'alpha-bravo''charlie-delta' refused`)
	if want := `value '***''***' refused`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestStringLeavesOtherText(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		in     string
		want   string
	}{
		{"no values", nil, "nothing to hide", "nothing to hide"},
		{"short value is not searched", []string{"abc"}, "abc abc", "abc abc"},
		{"short parts stay", []string{`ab"cd"ef"gh`}, "ab cd ef gh", "ab cd ef gh"},
		{"longest first", []string{"token", "token-long-form"}, "token-long-form and token", "*** and ***"},
		{"mask itself", []string{"****"}, "a **** b", "a *** b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New()
			r.Add(tt.values...)
			if got := r.String(tt.in); got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestErrorKeepsChain(t *testing.T) {
	r := New()
	r.Add("hunter2-hunter2")
	base := &fs.PathError{Op: "open", Path: "hunter2-hunter2", Err: fs.ErrNotExist}
	err := r.Error(fmt.Errorf("read failed: %w", base))
	if got := err.Error(); got != "read failed: open ***: file does not exist" {
		t.Errorf("Error() = %q", got)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("masked error lost its chain: %v", err)
	}
	if !IsMasked(err) {
		t.Error("IsMasked = false for a masked error")
	}
	plain := errors.New("nothing here")
	if r.Error(plain) != plain {
		t.Error("an error holding no value was wrapped")
	}
}

func TestAddDataAndMerge(t *testing.T) {
	a := New()
	a.AddData(map[string][]byte{"password": []byte("from-a-secret"), "short": []byte("ab")})
	b := New()
	b.Merge(a)
	b.Add("decrypted-value")
	if got := b.String("from-a-secret decrypted-value ab"); got != "*** *** ab" {
		t.Errorf("got %q", got)
	}
	if b.Len() != 2 {
		t.Errorf("Len() = %d, want 2", b.Len())
	}
	var nilR *Redactor
	if nilR.String("x") != "x" || nilR.Len() != 0 {
		t.Error("a nil Redactor must mask nothing")
	}
}
