package render

import (
	"errors"
	"fmt"
	"strconv"

	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/git"
)

// Classes of render failure. An *Error unwraps to exactly one of them; the
// two callers branch on (errors.Is(err, ErrOutsideRoot), ErrTooLarge) are
// exported. Every class is permanent for a given revision: retrying the same
// commit cannot succeed.
var (
	// ErrOutsideRoot: a path, symlink, kustomize resource, component, patch or
	// generator file resolves outside the repository checkout.
	ErrOutsideRoot = errors.New("outside the repository root")
	// ErrTooLarge: a file, the total input, the file count or a YAML document's
	// alias expansion exceeds an Options cap.
	ErrTooLarge = errors.New("too large")
	// errInvalidYAML: a file does not parse as YAML or JSON.
	errInvalidYAML = errors.New("invalid YAML")
	// errInvalidObject: a document is not a Kubernetes object (missing
	// apiVersion, kind or metadata.name, or of the wrong shape).
	errInvalidObject = errors.New("invalid object")
	// errDuplicate: two documents describe the same group, kind, namespace and name.
	errDuplicate = errors.New("duplicate object")
	// errNotFound: the render path, or a path a kustomization refers to, does not exist.
	errNotFound = errors.New("not found")
	// errRemoteDisabled: a kustomization refers to a remote base, resource or
	// file; rendering never reaches the network.
	errRemoteDisabled = errors.New("remote reference not allowed")
	// errKustomize: kustomize rejected the kustomization for another reason.
	errKustomize = errors.New("kustomize build failed")
	// ErrOverBudget: the render produced more output, or (in a sandbox)
	// used more memory, CPU time or wall time, than its budget.Limits allow;
	// the cause is a *budget.ExceededError.
	ErrOverBudget = budget.ErrExceeded
	// errHelm: Helm refused the chart (a template error, a dependency not
	// vendored, a values file that is not a map, a kubeVersion constraint).
	errHelm = errors.New("helm chart failed")
	// errPostRender: a post-render change (spec.patches, spec.images,
	// spec.commonMetadata) could not be made, or a patch's target matched
	// nothing.
	errPostRender = errors.New("post-render change failed")
)

// Error says where in the checkout rendering failed and why. Its message
// reads like a compiler's: "deploy/app.yaml:12: document 3: missing kind". It
// never quotes file contents, so a Secret manifest cannot leak through it.
type Error struct {
	// Class is one of the Err* sentinels above.
	Class error
	// Path is the file or directory, relative to the repository root, using "/".
	Path string
	// Line is the 1-based line where the document starts, 0 when unknown.
	Line int
	// Document is the 1-based index of the YAML document in Path, 0 when not
	// about one document.
	Document int
	// Detail is the human explanation, e.g. "missing kind".
	Detail string
	// Err is the underlying cause, if any (never carries credentials).
	Err error
}

// Error formats "path:line: document N: detail: cause".
func (e *Error) Error() string {
	s := e.Path
	if s == "" {
		s = "."
	}
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
	}
	if e.Document > 0 {
		s += ": document " + strconv.Itoa(e.Document)
	}
	detail := e.Detail
	if detail == "" && e.Class != nil {
		detail = e.Class.Error()
	}
	s += ": " + detail
	if e.Err != nil {
		s += ": " + git.RedactText(e.Err.Error())
	}
	return s
}

// Unwrap exposes both the class and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	errs := []error{e.Class}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// overBudget places a budget refusal at loc.
func overBudget(loc docLocation, err error) error {
	return &Error{Class: ErrOverBudget, Path: loc.Path, Line: loc.Line, Document: loc.Document,
		Detail: "render budget exceeded", Err: err}
}

// renderErr builds an Error about a whole file or directory.
func renderErr(class error, path, format string, args ...any) *Error {
	return &Error{Class: class, Path: path, Detail: fmt.Sprintf(format, args...)}
}

// docErr builds an Error about one document of a file.
func docErr(class error, loc docLocation, format string, args ...any) *Error {
	return &Error{Class: class, Path: loc.Path, Line: loc.Line, Document: loc.Document,
		Detail: fmt.Sprintf(format, args...)}
}

// docLocation is where a document came from, kept for error messages.
type docLocation struct {
	Path     string
	Document int
	Line     int
}

// String formats the location like Error does, e.g. "a.yaml:3: document 2".
func (l docLocation) String() string {
	s := l.Path
	if l.Line > 0 {
		s += ":" + strconv.Itoa(l.Line)
	}
	if l.Document > 0 {
		s += ": document " + strconv.Itoa(l.Document)
	}
	return s
}
