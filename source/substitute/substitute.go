package substitute

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/object"
	"gitsync.dev/gitsync/source/budget"
)

// namePattern is what a variable name may be.
var namePattern = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)

// ValidName reports whether name can be referenced as ${name}.
func ValidName(name string) bool { return namePattern.MatchString(name) }

// Variables are the values one GitSync substitutes, each remembered with
// whether it came from a Secret (sensitive: masked wherever a diff shows it).
type Variables struct {
	values    map[string]string
	sensitive map[string]bool
}

// Set defines name; a later Set of the same name wins.
func (v *Variables) Set(name, value string, sensitive bool) {
	if v.values == nil {
		v.values, v.sensitive = map[string]string{}, map[string]bool{}
	}
	v.values[name] = value
	v.sensitive[name] = sensitive
}

// Len is the number of variables defined.
func (v *Variables) Len() int { return len(v.values) }

// SensitiveValues returns the non-empty values of sensitive variables,
// sorted, for callers that must redact text they did not build.
func (v *Variables) SensitiveValues() []string {
	var out []string
	for name, s := range v.sensitive {
		if s && v.values[name] != "" {
			out = append(out, v.values[name])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Options says how to treat a reference without a value, and how much
// substitution may add.
type Options struct {
	// Strict makes a ${NAME} without a value and without a default an
	// error; otherwise it becomes the empty string (spec.substituteStrict).
	Strict bool
	// Budget is charged with every string substitution builds, before it
	// is built: a 1 MB variable used 700 times is refused at the charge
	// that passes the budget, not after 700 MB were allocated. Nil means a
	// fresh one with budget.DefaultLimits.
	Budget *budget.Budget
}

// DefaultOptions is strict, as spec.substituteStrict defaults to true.
func DefaultOptions() Options { return Options{Strict: true} }

// Result is the substituted set.
type Result struct {
	// Objects are in input order; unchanged objects are the input pointers,
	// changed ones are copies.
	Objects []*unstructured.Unstructured
	// Sensitive lists, per object, the field paths ("data.password",
	// "spec.template.spec.containers[0].env[1].value") whose value took
	// a sensitive variable, sorted.
	Sensitive map[object.ID][]string
}

// UndefinedError is a reference in strict mode to a variable that has no
// value and no default.
type UndefinedError struct {
	Object   object.ID
	Path     string
	Variable string
}

func (e *UndefinedError) Error() string {
	return fmt.Sprintf("%s: variable %q at %s is not defined and has no default", e.Object, e.Variable, e.Path)
}

// BudgetError is a substitution refused because what it would build passes
// the budget (Options.Budget); Err is the *budget.ExceededError.
type BudgetError struct {
	Object object.ID
	Path   string
	Err    error
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("%s: substitution at %s refused: %v", e.Object, e.Path, e.Err)
}

func (e *BudgetError) Unwrap() error { return e.Err }

// DuplicateError is two objects that substitution gave one identity.
type DuplicateError struct {
	Object object.ID
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("%s: defined twice after substitution (a variable in metadata.name or metadata.namespace)", e.Object)
}

// Disabled reports whether obj opts out of substitution with the
// gitsync.dev/substitute: disabled annotation.
func Disabled(obj *unstructured.Unstructured) bool {
	return strings.EqualFold(obj.GetAnnotations()[v1.AnnotationSubstitute], "disabled")
}

// Objects substitutes vars into objs. Objects that opt out are passed
// through. With no variables and non-strict mode nothing can change, but
// references are still checked in strict mode.
func Objects(objs []*unstructured.Unstructured, vars Variables, opts Options) (*Result, error) {
	if opts.Budget == nil {
		opts.Budget = budget.New(budget.DefaultLimits())
	}
	res := &Result{Objects: make([]*unstructured.Unstructured, len(objs)), Sensitive: map[object.ID][]string{}}
	seen := make(map[object.ID]bool, len(objs))
	for i, obj := range objs {
		out, paths, err := substituteObject(obj, &vars, opts)
		if err != nil {
			return nil, err
		}
		id := object.IDOf(out)
		if seen[id] {
			return nil, &DuplicateError{Object: id}
		}
		seen[id] = true
		res.Objects[i] = out
		if len(paths) > 0 {
			slices.Sort(paths)
			res.Sensitive[id] = paths
		}
	}
	return res, nil
}

// substituteObject substitutes into one object, copying it only when a value changes.
func substituteObject(obj *unstructured.Unstructured, vars *Variables, opts Options) (*unstructured.Unstructured, []string, error) {
	if Disabled(obj) {
		return obj, nil, nil
	}
	w := &walker{vars: vars, opts: opts, id: object.IDOf(obj)}
	changed, err := w.probe(obj.Object)
	if err != nil || !changed {
		return obj, nil, err
	}
	out := obj.DeepCopy()
	w.write = true
	if _, err := w.probe(out.Object); err != nil {
		return nil, nil, err
	}
	return out, w.sensitive, nil
}

// walker visits the string values of one object. With write unset it only
// reports whether anything would change (so unchanged objects are never
// copied); with write set it replaces the values in place.
type walker struct {
	vars      *Variables
	opts      Options
	id        object.ID
	write     bool
	sensitive []string
}

// skipTop are top-level fields never substituted: the type's identity and
// the metadata of a SOPS document (its MAC covers the original values).
var skipTop = map[string]bool{"apiVersion": true, "kind": true, "sops": true}

func (w *walker) probe(top map[string]any) (bool, error) {
	changed := false
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if skipTop[k] {
			continue
		}
		c, err := w.visit(top, k, top[k], k)
		if err != nil {
			return false, err
		}
		changed = changed || c
	}
	return changed, nil
}

// visit handles the value v stored under key (a string for maps, an int for
// slices) of parent.
func (w *walker) visit(parent any, key any, v any, path string) (bool, error) {
	switch v := v.(type) {
	case string:
		s, changed, sensitive, err := w.expand(v, path)
		if err != nil || !changed {
			return false, err
		}
		if w.write {
			switch p := parent.(type) {
			case map[string]any:
				p[key.(string)] = s
			case []any:
				p[key.(int)] = s
			}
			if sensitive {
				w.sensitive = append(w.sensitive, path)
			}
		}
		return true, nil
	case map[string]any:
		changed := false
		for _, k := range slices.Sorted(maps.Keys(v)) {
			c, err := w.visit(v, k, v[k], path+"."+k)
			if err != nil {
				return false, err
			}
			changed = changed || c
		}
		return changed, nil
	case []any:
		changed := false
		for i := range v {
			c, err := w.visit(v, i, v[i], path+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return false, err
			}
			changed = changed || c
		}
		return changed, nil
	}
	return false, nil
}

// expand replaces the references in s. It reports whether s changed and
// whether a sensitive variable went into it. The result's size is known
// before it is built and charged to the budget first; the probe (write
// unset) builds nothing.
func (w *walker) expand(s, path string) (string, bool, bool, error) {
	if !strings.Contains(s, "${") {
		return s, false, false, nil
	}
	size, changed, sensitive, err := w.scan(s, path, nil)
	if err != nil || !changed || !w.write {
		return s, changed, sensitive, err
	}
	if err := w.opts.Budget.Charge(budget.StageSubstitute, int64(size)); err != nil {
		return "", false, false, &BudgetError{Object: w.id, Path: path, Err: err}
	}
	var b strings.Builder
	b.Grow(size)
	w.scan(s, path, &b)
	return b.String(), changed, sensitive, nil
}

// scan walks the references in s, writing the result to b when b is set,
// and returns the result's size.
func (w *walker) scan(s, path string, b *strings.Builder) (int, bool, bool, error) {
	size, changed, sensitive := 0, false, false
	out := func(p string) {
		size += len(p)
		if b != nil {
			b.WriteString(p)
		}
	}
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			out(s)
			break
		}
		if i > 0 && s[i-1] == '$' { // "$${": the escape, one "$" is dropped
			out(s[:i-1])
			out("${")
			s, changed = s[i+2:], true
			continue
		}
		out(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			out(s[i:])
			break
		}
		ref := s[i+2 : i+end]
		val, ok, sens, err := w.resolve(ref, path)
		if err != nil {
			return 0, false, false, err
		}
		if !ok { // not a variable reference: keep it as written
			out(s[i : i+end+1])
		} else {
			out(val)
			changed, sensitive = true, sensitive || sens
		}
		s = s[i+end+1:]
	}
	return size, changed, sensitive, nil
}

// resolve returns the value of one reference's content ("NAME" or
// "NAME:=default"); ok is false when it is not a variable reference.
func (w *walker) resolve(ref, path string) (val string, ok, sensitive bool, err error) {
	name, def, hasDefault := strings.Cut(ref, ":=")
	if !ValidName(name) {
		return "", false, false, nil
	}
	if v, defined := w.vars.values[name]; defined {
		return v, true, w.vars.sensitive[name], nil
	}
	if hasDefault {
		return def, true, false, nil
	}
	if w.opts.Strict {
		return "", false, false, &UndefinedError{Object: w.id, Path: path, Variable: name}
	}
	return "", true, false, nil
}
