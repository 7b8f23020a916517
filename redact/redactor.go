package redact

import (
	"errors"
	"slices"
	"strings"
	"sync"
)

// Mask stands in for a sensitive value in every message.
const Mask = "***"

// MinLength is the shortest value searched for; MinPartLength the shortest
// run of a value between escaped characters (a shorter run is likely a
// common word, and alone tells little of the value).
const (
	MinLength     = 4
	MinPartLength = 8
)

// Redactor knows the sensitive values of one sync and masks them in text.
// It is safe for concurrent use; the zero value is not, use New.
type Redactor struct {
	mu       sync.Mutex
	values   map[string]bool
	replacer *strings.Replacer // of every form of every value; nil: rebuild
}

// New returns a Redactor that knows no value yet.
func New() *Redactor { return &Redactor{values: map[string]bool{}} }

// Add makes values sensitive from now on.
func (r *Redactor) Add(values ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range values {
		if len(v) >= MinLength && !r.values[v] {
			r.values[v] = true
			r.replacer = nil
		}
	}
}

// AddData makes every value of a Secret's data sensitive.
func (r *Redactor) AddData(data map[string][]byte) {
	for _, v := range data {
		r.Add(string(v))
	}
}

// Merge makes the values other knows sensitive to r too.
func (r *Redactor) Merge(other *Redactor) {
	if other == nil || other == r {
		return
	}
	other.mu.Lock()
	values := make([]string, 0, len(other.values))
	for v := range other.values {
		values = append(values, v)
	}
	other.mu.Unlock()
	r.Add(values...)
}

// Len is how many values r knows.
func (r *Redactor) Len() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.values)
}

// String returns s with every form of every known value masked. A nil
// Redactor masks nothing.
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	rep := r.current()
	if rep == nil {
		return s
	}
	return rep.Replace(s)
}

// Error returns err with its text masked, or err itself when the text holds
// no known value. errors.Is and errors.As still reach err's chain: callers
// classify by type, never by printing a cause they unwrapped.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	masked := r.String(text)
	if masked == text {
		return err
	}
	return &maskedError{err: err, text: masked}
}

// maskedError is an error whose text was masked.
type maskedError struct {
	err  error
	text string
}

func (e *maskedError) Error() string { return e.text }
func (e *maskedError) Unwrap() error { return e.err }

// IsMasked reports whether err's text was made by a Redactor.
func IsMasked(err error) bool {
	var me *maskedError
	return errors.As(err, &me)
}

// current returns the replacer of r's values, built once per change.
func (r *Redactor) current() *strings.Replacer {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.values) == 0 {
		return nil
	}
	if r.replacer == nil {
		r.replacer = newReplacer(r.values)
	}
	return r.replacer
}

// newReplacer masks every form of values, longest first: strings.Replacer
// tries its patterns in argument order at each position, so a form that
// contains another is masked whole.
func newReplacer(values map[string]bool) *strings.Replacer {
	set := map[string]bool{}
	for v := range values {
		for _, f := range forms(v) {
			if f != Mask {
				set[f] = true
			}
		}
	}
	patterns := make([]string, 0, len(set))
	for f := range set {
		patterns = append(patterns, f)
	}
	slices.SortFunc(patterns, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	args := make([]string, 0, 2*len(patterns))
	for _, p := range patterns {
		args = append(args, p, Mask)
	}
	return strings.NewReplacer(args...)
}
