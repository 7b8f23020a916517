package render

import (
	"errors"
	"fmt"
	"path/filepath"
)

// DefaultMaxObjects is the object cap of one render: far above any sane
// application path, far below what exhausts an agent with a 512 MiB limit
// (one 4 MiB file of small documents decodes into ~65,000 objects and
// ~465 MB of heap without it).
const DefaultMaxObjects = 10_000

// ObjectLimitError is the cause of a render refused for holding more objects
// than its cap. Callers find it with errors.As to tell the user which knob
// raises the cap.
type ObjectLimitError struct {
	// Max is the cap that was exceeded.
	Max int
	// Setting names what sets the cap, "--max-objects" when empty.
	Setting string
}

func (e *ObjectLimitError) Error() string {
	setting := e.Setting
	if setting == "" {
		setting = "--max-objects"
	}
	return fmt.Sprintf("the cap is %d objects per revision (%s)", e.Max, setting)
}

// ErrObjectLimit is matched by every *ObjectLimitError with errors.Is.
var ErrObjectLimit = errors.New("object cap exceeded")

// Is makes errors.Is(err, ErrObjectLimit) hold.
func (e *ObjectLimitError) Is(target error) bool { return target == ErrObjectLimit }

// objectBudget counts the objects one Render has decoded so far. It is
// shared by everything that render decodes (plain files, nested
// kustomizations) through the Options they are handed, and is not safe
// for concurrent use: a render decodes one document at a time.
type objectBudget struct {
	max   int
	count int
}

// newObjectBudget starts a count against max (<= 0 means DefaultMaxObjects).
func newObjectBudget(max int) *objectBudget {
	if max <= 0 {
		max = DefaultMaxObjects
	}
	return &objectBudget{max: max}
}

// add charges n objects decoded at loc and fails as soon as the total passes
// the cap, so decoding stops at the first document over it instead of after
// the whole file. A nil budget (decoding outside Render) charges nothing.
func (b *objectBudget) add(loc docLocation, n int) error {
	if b == nil {
		return nil
	}
	b.count += n
	if b.count <= b.max {
		return nil
	}
	return b.refusal(loc)
}

// expect fails when n more objects, about to be decoded at loc, would pass
// the cap; nothing is charged. Kustomize hands its output over in one piece,
// so this refuses it before each resource is encoded and decoded again.
func (b *objectBudget) expect(loc docLocation, n int) error {
	if b == nil || b.count+n <= b.max {
		return nil
	}
	return b.refusal(loc)
}

func (b *objectBudget) refusal(loc docLocation) *Error {
	return &Error{Class: ErrTooLarge, Path: loc.Path, Line: loc.Line, Document: loc.Document,
		Detail: fmt.Sprintf("more than %d objects", b.max), Err: &ObjectLimitError{Max: b.max}}
}

// countObjects charges the objects of one decoded document to opts' budget.
func (o Options) countObjects(loc docLocation, n int) error { return o.objects.add(loc, n) }

// kustomizeOutput is the location of a kustomization's output in messages,
// e.g. "apps/prod (kustomize output)", for the absolute dir kustomize ran in.
func kustomizeOutput(repo *repoRoot, dir string) docLocation {
	rel, err := filepath.Rel(repo.dir, dir)
	if err != nil {
		rel = "."
	}
	return docLocation{Path: filepath.ToSlash(rel) + " (kustomize output)"}
}
