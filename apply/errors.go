package apply

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// Conflict is one field another manager owns with a different value.
type Conflict struct {
	// Manager is the other field manager, e.g. "kubectl-edit" or "hpa-controller".
	Manager string
	// Field is the field path as the apiserver prints it, e.g. ".spec.replicas".
	Field string
}

// ConflictError reports that server-side apply refused to change fields other
// managers own. The fields were left alone; Force (or listing the managers in
// Options.TakeOverManagers) takes them.
type ConflictError struct {
	Conflicts []Conflict
	// Err is the apiserver's 409 error.
	Err error
}

func (e *ConflictError) Error() string {
	byManager := map[string][]string{}
	for _, c := range e.Conflicts {
		byManager[c.Manager] = append(byManager[c.Manager], c.Field)
	}
	var parts []string
	for _, m := range e.Managers() {
		parts = append(parts, fmt.Sprintf("%q owns %s", m, strings.Join(byManager[m], ", ")))
	}
	return "conflict with field manager " + strings.Join(parts, "; ") + " (set force to take ownership)"
}

func (e *ConflictError) Unwrap() error { return e.Err }

// Managers returns the conflicting managers, sorted and without duplicates.
func (e *ConflictError) Managers() []string {
	var out []string
	for _, c := range e.Conflicts {
		out = append(out, c.Manager)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ImmutableError reports a change to a field the apiserver does not allow to
// change. The object is recreated only when it carries v1.AnnotationRecreate:
// "enabled" or Force is set.
type ImmutableError struct {
	// Fields are the immutable field paths, e.g. "spec.selector".
	Fields []string
	// Err is the apiserver's 422 error.
	Err error
}

// Error names the fields and how to let the object be recreated; the
// apiserver's text is left out (it quotes values as Go literals), Unwrap has it.
func (e *ImmutableError) Error() string {
	return fmt.Sprintf("immutable field %s changed: to delete and recreate the object, use --force (spec.force for a GitSync) or annotate it %s: enabled",
		strings.Join(e.Fields, ", "), v1.AnnotationRecreate)
}

func (e *ImmutableError) Unwrap() error { return e.Err }

// asConflict turns an apiserver apply conflict into a *ConflictError; it
// returns nil for any other error.
func asConflict(err error) *ConflictError {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsConflict(err) {
		return nil
	}
	details := status.Status().Details
	if details == nil {
		return nil
	}
	ce := &ConflictError{Err: err}
	for _, c := range details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		ce.Conflicts = append(ce.Conflicts, Conflict{Manager: conflictManager(c.Message), Field: c.Field})
	}
	if len(ce.Conflicts) == 0 {
		return nil
	}
	return ce
}

// conflictManager extracts the manager from a cause message such as
// `conflict with "kubectl-edit" using v1` (the apiserver quotes it with %q).
func conflictManager(msg string) string {
	rest, ok := strings.CutPrefix(msg, "conflict with ")
	if !ok {
		return msg
	}
	quoted, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return rest
	}
	m, err := strconv.Unquote(quoted)
	if err != nil {
		return rest
	}
	return m
}

// immutablePhrases are the words the apiserver's validation uses for a field
// that cannot change: "field is immutable" (ValidateImmutableField, Job
// template, StatefulSet volumeClaimTemplates, Deployment selector), "may not
// change once set" (Service clusterIPs, ipFamilies, loadBalancerClass), "is
// immutable after creation" (PersistentVolumeClaim spec) and CEL
// transition rules that say "immutable".
var immutablePhrases = []string{"immutable", "may not change once set"}

// asImmutable turns an apiserver rejection whose every cause is an immutable
// field into an *ImmutableError; it returns nil for any other error. A
// rejection that also has another cause (an invalid value) is not one:
// recreating the object would delete it and then fail to create it.
func asImmutable(err error) *ImmutableError {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) {
		return nil
	}
	ie := &ImmutableError{Err: err}
	d := status.Status().Details
	if d == nil {
		return nil
	}
	for _, c := range d.Causes {
		if !isImmutableCause(c.Message) {
			return nil
		}
		if !slices.Contains(ie.Fields, c.Field) {
			ie.Fields = append(ie.Fields, c.Field)
		}
	}
	if len(ie.Fields) == 0 {
		return nil
	}
	return ie
}

func isImmutableCause(msg string) bool {
	for _, p := range immutablePhrases {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// NamespaceMissingError reports that an object's namespace does not exist, so
// the apiserver refused it. Every object of that namespace fails the same
// way; callers that list failures say the fix once (see Hint).
type NamespaceMissingError struct {
	Namespace string
	// Err is the apiserver's 404 error.
	Err error
}

func (e *NamespaceMissingError) Error() string {
	return "namespace " + e.Namespace + " does not exist"
}

func (e *NamespaceMissingError) Unwrap() error { return e.Err }

// Hint says what to do about the missing namespace.
func (e *NamespaceMissingError) Hint() string {
	return "create it, or add a Namespace manifest"
}

// asNamespaceMissing turns the apiserver's `namespaces "x" not found`, the
// answer to a write into a namespace that does not exist, into a
// *NamespaceMissingError; it returns nil for any other error.
func asNamespaceMissing(err error, namespace string) *NamespaceMissingError {
	var status apierrors.APIStatus
	if namespace == "" || !errors.As(err, &status) || !apierrors.IsNotFound(err) {
		return nil
	}
	d := status.Status().Details
	if d == nil || d.Kind != "namespaces" || d.Name != namespace {
		return nil
	}
	return &NamespaceMissingError{Namespace: namespace, Err: err}
}

// UnknownKindError reports an object whose kind the cluster does not serve:
// a misspelt kind, or a custom resource whose CRD is not installed.
type UnknownKindError struct {
	// Kind is the object's kind, e.g. "ConfigMapp".
	Kind string
	// APIVersion is the object's apiVersion, e.g. "v1" or "example.com/v1".
	APIVersion string
	// Err is the RESTMapper's no-match error.
	Err error
}

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("unknown kind %s in %s: the cluster does not serve it; check the spelling, or install its CustomResourceDefinition",
		e.Kind, e.APIVersion)
}

func (e *UnknownKindError) Unwrap() error { return e.Err }

// InvalidError reports an object the apiserver refused as invalid, told in
// field paths and expected types: the apiserver's own text can hold Go
// values (`&value.valueUnstructured{Value:1}`), the object's name and kind
// twice, and, for CRD fields, a note about a CEL rule that could not even
// run on the bad value. Unwrap gives the apiserver's error.
type InvalidError struct {
	// Problems are "field: what is wrong", e.g. ".data.k: expected string, got number".
	Problems []string
	// Err is the apiserver's error.
	Err error
}

func (e *InvalidError) Error() string {
	return "invalid: " + strings.Join(e.Problems, "; ")
}

func (e *InvalidError) Unwrap() error { return e.Err }

// typedPatchPrefix starts the message of server-side apply's type check of
// the applied object against the kind's schema.
const typedPatchPrefix = "failed to create typed patch object"

// goValue matches the Go rendering of a value in structured-merge-diff's
// type errors: `got &value.valueUnstructured{Value:1}`.
var goValue = regexp.MustCompile(`&value\.valueUnstructured\{Value:(.*)\}$`)

// celConversion is the note a CRD's CEL rule adds when the field's value does
// not even have the rule's type; the schema's own message says what is wrong.
const celConversion = "type conversion error"

// durationUnits ends the pattern a CRD gives a duration field (as our
// GitSync's interval does), which the apiserver quotes when a value fails it.
const durationUnits = "(ns|us|µs|ms|s|m|h))+$'"

// asInvalid turns an apiserver rejection of the object's content (a type
// error from server-side apply, a 422 with causes) into an *InvalidError; it
// returns nil for any other error and for immutable fields (asImmutable).
func asInvalid(err error) *InvalidError {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return nil
	}
	st := status.Status()
	if _, after, ok := strings.Cut(st.Message, typedPatchPrefix); ok {
		// "(ns/name; v1, Kind=ConfigMap): .data.k: expected ..." or "...: errors:\n  a\n  b"
		if _, rest, ok := strings.Cut(after, "): "); ok {
			return &InvalidError{Problems: typeProblems(rest), Err: err}
		}
	}
	if !apierrors.IsInvalid(err) || st.Details == nil || len(st.Details.Causes) == 0 {
		return nil
	}
	ie := &InvalidError{Err: err}
	for _, c := range st.Details.Causes {
		if strings.Contains(c.Message, celConversion) && len(st.Details.Causes) > 1 {
			continue
		}
		ie.Problems = append(ie.Problems, causeProblem(c))
	}
	return ie
}

// causeProblem is one cause of a 422 on one line, led by its field. A
// duration that fails the CRD's pattern is said as such, not as the regular
// expression.
func causeProblem(c metav1.StatusCause) string {
	msg, _, _ := strings.Cut(strings.TrimSpace(c.Message), "\n")
	if strings.Contains(msg, "in body should match '") && strings.HasSuffix(msg, durationUnits) {
		value := "the value"
		if rest, ok := strings.CutPrefix(msg, "Invalid value: "); ok {
			if v, _, ok := strings.Cut(rest, ": "); ok {
				value = v
			}
		}
		msg = value + " is not a duration such as 30s, 5m or 1h30m"
	}
	if c.Field == "" {
		return msg
	}
	return c.Field + ": " + strings.TrimPrefix(msg, c.Field+" ")
}

// typeProblems splits server-side apply's type errors into one problem per
// field and says the type of a wrong value instead of printing it.
func typeProblems(text string) []string {
	text = strings.TrimPrefix(strings.TrimSpace(text), "errors:")
	var out []string
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if m := goValue.FindStringSubmatchIndex(line); m != nil {
			line = line[:m[0]] + jsonTypeOfGo(line[m[2]:m[3]])
		}
		out = append(out, line)
	}
	return out
}

// jsonTypeOfGo names the JSON type of a value printed with Go's %#v.
func jsonTypeOfGo(v string) string {
	switch {
	case strings.HasPrefix(v, `"`):
		return "string"
	case strings.HasPrefix(v, "map["):
		return "object"
	case strings.HasPrefix(v, "[]"):
		return "list"
	case v == "true" || v == "false":
		return "boolean"
	case v == "<nil>" || v == "interface {}(nil)":
		return "null"
	}
	return "number"
}

// explain returns err, an apiserver's refusal to write an object in
// namespace, as the typed error that tells it plainly: *NamespaceMissingError
// or *InvalidError; any other error is returned as it is.
func explain(err error, namespace string) error {
	if err == nil {
		return nil
	}
	if nm := asNamespaceMissing(err, namespace); nm != nil {
		return nm
	}
	if ie := asInvalid(err); ie != nil {
		return ie
	}
	return err
}
