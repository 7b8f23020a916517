package render

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Secret values never appear in a render error. The tools we render with
// quote the text they choke on: the YAML parser (`cannot decode !!str `...`
// as a !!int`), kustomize (an env file's line, a literal, a replacement's
// node). In a Secret that text is the value. So there is one rule, applied
// where render errors are wrapped: when the input a tool read may hold a
// Secret, its message is replaced by one built from what we know without
// quoting — the file, the document or kustomization, the line, the
// generator. Inputs that cannot hold a Secret keep the tool's message, which
// is the most useful one.

// mayHoldSecret reports whether data may describe a Secret or feed one: it
// names the kind (a Secret document, a replacement or patch selecting
// Secrets) or a secretGenerator, or it holds an escape sequence or a binary
// tag, the only ways YAML and JSON can spell those words without their
// letters. It errs towards true: a false positive costs a less detailed
// message, a false negative a leaked value.
func mayHoldSecret(data []byte) bool {
	for _, word := range []string{"Secret", "secretGenerator", `\`, "binary"} {
		if bytes.Contains(data, []byte(word)) {
			return true
		}
	}
	return false
}

// withheldError stands in for a parser's or kustomize's message about input
// that may hold a Secret. It carries no text of the input.
type withheldError struct {
	// Tool is whose message is withheld, e.g. "the YAML parser".
	Tool string
	// Line is the 1-based line of the file the tool pointed at, 0 when unknown.
	Line int
	// Sources are the files the tool read that may hold Secret data.
	Sources []string
}

func (e *withheldError) Error() string {
	s := e.Tool + "'s message is withheld: it may quote Secret data"
	if e.Line > 0 {
		s = "line " + strconv.Itoa(e.Line) + ": " + s
	}
	if len(e.Sources) > 0 {
		s += " read from " + strings.Join(e.Sources, ", ")
	}
	return s
}

// parserLine matches the position sigs.k8s.io/yaml puts first in its
// messages; only this anchored prefix is read, never the rest.
var parserLine = regexp.MustCompile(`^(?:error converting YAML to JSON: )?yaml: line (\d+):`)

// withheldYAML returns err, a YAML parser error about doc, unchanged when doc
// cannot hold a Secret, else a *withheldError that keeps only the line.
func withheldYAML(doc yamlDocument, err error) error {
	if !mayHoldSecret(doc.Data) {
		return yamlLineError{err: err, offset: doc.Offset}
	}
	w := &withheldError{Tool: "the YAML parser"}
	if m := parserLine.FindStringSubmatch(err.Error()); m != nil {
		if n, convErr := strconv.Atoi(m[1]); convErr == nil {
			w.Line = n + doc.Offset
		}
	}
	return w
}

// withheldJSON returns err, a JSON parser error about data, unchanged when
// data cannot hold a Secret, else a *withheldError.
func withheldJSON(data []byte, err error) error {
	if !mayHoldSecret(data) {
		return err
	}
	return &withheldError{Tool: "the JSON parser"}
}

// secretEnvFile is an env file a secretGenerator reads, for its messages.
type secretEnvFile struct {
	Kustomization string // slash path of the kustomization naming it
	Generator     string // the generator's name
}

// checkSecretEnv validates the env file at path (slash-separated) of a
// secretGenerator before kustomize parses it, because kustomize's errors
// quote the offending line and because a line without "=" becomes a key
// named after the line's content. Lines are read as kustomize reads them:
// a UTF-8 byte-order mark on the first line and leading space are dropped;
// blank lines and "#" comments are skipped.
func checkSecretEnv(path string, data []byte, gen secretEnvFile) error {
	fail := func(line int, detail string) error {
		return &Error{Class: errKustomize, Path: path, Line: line,
			Detail: fmt.Sprintf("env file of secretGenerator %q in %s: %s (the line's content is withheld)",
				gen.Generator, gen.Kustomization, detail)}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if !utf8.Valid(line) {
			return fail(n, "line is not valid UTF-8")
		}
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		line = bytes.TrimLeftFunc(line, unicode.IsSpace)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		key, _, found := strings.Cut(string(line), "=")
		if !found {
			return fail(n, `line has no "=": write KEY=VALUE`)
		}
		if len(validation.IsConfigMapKey(key)) > 0 {
			return fail(n, "key is not a valid Secret key (alphanumerics, '-', '_' or '.')")
		}
	}
	if err := sc.Err(); err != nil {
		return &Error{Class: errKustomize, Path: path, Detail: fmt.Sprintf(
			"env file of secretGenerator %q in %s: a line is too long", gen.Generator, gen.Kustomization)}
	}
	return nil
}

// checkSecretLiteral validates one literal of a secretGenerator, which
// kustomize would quote whole in its error.
func checkSecretLiteral(literal string) string {
	key, _, found := strings.Cut(literal, "=")
	switch {
	case !found || key == "":
		return `expected KEY=VALUE`
	case len(validation.IsConfigMapKey(key)) > 0:
		return "key is not a valid Secret key (alphanumerics, '-', '_' or '.')"
	}
	return ""
}
