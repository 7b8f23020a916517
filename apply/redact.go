package apply

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/diff"
	"gitsync.dev/gitsync/object"
)

// Secret values never leave the Secret. The apiserver's messages quote the
// values they reject (`data[k]: Invalid value: "..."`, server-side apply's
// "expected string, got ..." with the whole value), and such a message would
// travel on into conditions, Events, logs and CLI output. So every error
// about a Secret is rebuilt here, at the two places the applier makes errors
// about objects (applyOne and failPlan), from facts that cannot hold a value:
// the status code and reason, each cause's type and field path (a key that is
// not a valid Secret key is withheld too), conflicting managers, and checks
// of the desired object made here. The apiserver's text is never copied.
//
// The rebuilt error keeps its classes: *ConflictError, *ImmutableError and
// *diff.DryRunError stay themselves, an apiserver status stays an
// *apierrors.StatusError with its code, reason and causes (apierrors.IsInvalid
// and friends answer as before), and context and transport errors, which
// never carry a request body, are kept as they are.

// withheldNote ends a message whose apiserver text was withheld.
const withheldNote = "(the apiserver's message is withheld: it may quote Secret values)"

// isSecret reports whether id is a core Secret.
func isSecret(id object.ID) bool { return id.Group == "" && id.Kind == "Secret" }

// secretSafe returns err as it may be told about the object id: unchanged
// unless id is a Secret, else rebuilt without any text the apiserver or a
// library wrote. desired, when known, is checked for the mistakes whose
// rejection the apiserver reports without a field (bad base64, a value that
// is not a string), so the message still says what to fix.
func secretSafe(id object.ID, desired *unstructured.Unstructured, err error) error {
	if err == nil || !isSecret(id) {
		return err
	}
	return withhold(err, secretProblems(desired))
}

// withhold rebuilds err and the errors it wraps; hints are added to the
// message of an apiserver status that names no field.
func withhold(err error, hints []string) error {
	switch e := err.(type) {
	case nil:
		return nil
	case *ConflictError:
		out := &ConflictError{Err: withhold(e.Err, hints)}
		for _, c := range e.Conflicts {
			out.Conflicts = append(out.Conflicts, Conflict{Manager: c.Manager, Field: safeField(c.Field)})
		}
		return out
	case *ImmutableError:
		out := &ImmutableError{Err: withhold(e.Err, hints)}
		for _, f := range e.Fields {
			out.Fields = append(out.Fields, safeField(f))
		}
		return out
	case *diff.DryRunError:
		return &diff.DryRunError{ID: e.ID, Err: withhold(e.Err, hints)}
	case apierrors.APIStatus:
		return withheldStatus(e.Status(), hints)
	}
	if keepsNoValue(err) {
		return err
	}
	return rewrap(err, hints)
}

// keepsNoValue reports whether err is of a kind that never holds a request
// body: a context's end, a transport failure (which names only the URL, built
// from the object's name), or the differ having no client.
func keepsNoValue(err error) bool {
	switch err.(type) {
	case *url.Error, net.Error:
		return true
	}
	return err == context.Canceled || err == context.DeadlineExceeded || err == diff.ErrNoClient
}

// rewrap rebuilds a wrapping error from its rebuilt causes. Wrappers made
// with fmt.Errorf's %w and errors.Join keep their own words (ours and
// client-go's are fixed phrases such as "recreate after %w: %w"); any other
// error is reduced to its causes, and a leaf nothing is known about is
// withheld whole.
func rewrap(err error, hints []string) error {
	var causes []error
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		causes = []error{u.Unwrap()}
	case interface{ Unwrap() []error }:
		causes = u.Unwrap()
	}
	text := err.Error()
	known := slices.Contains([]string{"*fmt.wrapError", "*fmt.wrapErrors", "*errors.joinError"}, fmt.Sprintf("%T", err))
	safe := make([]error, 0, len(causes))
	parts := make([]string, 0, len(causes))
	for _, c := range causes {
		if c == nil {
			continue
		}
		sc := withhold(c, hints)
		if known && strings.Contains(text, c.Error()) {
			text = strings.Replace(text, c.Error(), sc.Error(), 1)
		} else {
			known = false
		}
		safe = append(safe, sc)
		parts = append(parts, sc.Error())
	}
	if len(safe) == 0 {
		return fmt.Errorf("%T: message withheld: it may quote Secret values", err)
	}
	if !known {
		text = strings.Join(parts, ": ")
	}
	return &rewrapped{text: text, causes: safe}
}

// rewrapped is a wrapping error rebuilt around rebuilt causes.
type rewrapped struct {
	text   string
	causes []error
}

func (e *rewrapped) Error() string   { return e.text }
func (e *rewrapped) Unwrap() []error { return e.causes }

// withheldStatus rebuilds an apiserver status from its code, reason, details
// and causes, with a message made of the causes' fields and types.
func withheldStatus(s metav1.Status, hints []string) *apierrors.StatusError {
	out := metav1.Status{TypeMeta: s.TypeMeta, Status: s.Status, Code: s.Code, Reason: s.Reason}
	var said []string
	if d := s.Details; d != nil {
		out.Details = &metav1.StatusDetails{Name: d.Name, Group: d.Group, Kind: d.Kind, UID: d.UID,
			RetryAfterSeconds: d.RetryAfterSeconds}
		for _, c := range d.Causes {
			sc := metav1.StatusCause{Type: c.Type, Field: safeField(c.Field)}
			sc.Message = causeText(c.Type)
			out.Details.Causes = append(out.Details.Causes, sc)
			line := sc.Message
			if sc.Field != "" {
				line = sc.Field + ": " + line
			}
			if !slices.Contains(said, line) {
				said = append(said, line)
			}
		}
	}
	if len(said) == 0 {
		said = append(said, reasonText(s))
		said = append(said, hints...)
		said[len(said)-1] += " " + withheldNote
	}
	out.Message = strings.Join(said, "; ")
	return &apierrors.StatusError{ErrStatus: out}
}

// causeTexts say what each cause type means; types whose message quotes the
// rejected value say that it was withheld.
var causeTexts = map[metav1.CauseType]string{
	metav1.CauseTypeFieldValueNotFound:     "Not found",
	metav1.CauseTypeFieldValueRequired:     "Required value",
	metav1.CauseTypeFieldValueDuplicate:    "Duplicate value: (value withheld)",
	metav1.CauseTypeFieldValueInvalid:      "Invalid value: (value withheld)",
	metav1.CauseTypeFieldValueNotSupported: "Unsupported value: (value withheld)",
	metav1.CauseTypeForbidden:              "Forbidden",
	metav1.CauseTypeTooLong:                "Too long",
	metav1.CauseTypeTooMany:                "Too many",
	metav1.CauseTypeTypeInvalid:            "Invalid value: (value withheld)",
	metav1.CauseTypeFieldManagerConflict:   "Conflict",
}

func causeText(t metav1.CauseType) string {
	if s, ok := causeTexts[t]; ok {
		return s
	}
	return "Invalid: (details withheld)"
}

// reasonText names a status without its message, e.g. "BadRequest (400)".
func reasonText(s metav1.Status) string {
	if s.Reason == "" || !safePath.MatchString(string(s.Reason)) {
		return fmt.Sprintf("request failed (%d)", s.Code)
	}
	return fmt.Sprintf("%s (%d)", s.Reason, s.Code)
}

// safePath matches the characters a field path may show: those of Secret
// keys, dots and brackets.
var safePath = regexp.MustCompile(`^[-._a-zA-Z0-9\[\]]*$`)

// safeField returns a field path with every segment that is not made of
// Secret-key characters withheld: "data[PASSWORD: V]" becomes
// "data[(key withheld)]", because a malformed key is often a value that
// lost its "=".
func safeField(f string) string {
	if safePath.MatchString(f) {
		return f
	}
	var b strings.Builder
	for len(f) > 0 {
		i := strings.IndexAny(f[1:], ".[") + 1
		if i == 0 {
			i = len(f)
		}
		seg := f[:i]
		if f[0] == '[' {
			if j := strings.IndexByte(f, ']'); j >= 0 {
				seg = f[:j+1]
			} else {
				seg = f
			}
		}
		if !safePath.MatchString(seg) {
			if f[0] == '[' || f[0] == '.' {
				b.WriteByte(f[0])
			}
			b.WriteString("(key withheld)")
			if f[0] == '[' {
				b.WriteByte(']')
			}
			return b.String()
		}
		b.WriteString(seg)
		f = f[len(seg):]
	}
	return b.String()
}

// secretProblems checks the data and stringData of a desired Secret for what
// the apiserver rejects without naming a field.
func secretProblems(desired *unstructured.Unstructured) []string {
	if desired == nil {
		return nil
	}
	var out []string
	for _, field := range []string{"data", "stringData"} {
		v, present := desired.Object[field]
		if !present || v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			out = append(out, field+": not a map of keys to strings")
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			s, isString := m[k].(string)
			path := safeField(field + "[" + k + "]")
			switch {
			case !isString:
				out = append(out, path+": not a string")
			case field == "data" && !isBase64(s):
				out = append(out, path+": not valid base64")
			}
		}
	}
	return out
}

func isBase64(s string) bool {
	_, err := base64.StdEncoding.DecodeString(s)
	return err == nil
}
