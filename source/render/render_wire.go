package render

import (
	"encoding/json"
	"errors"

	"gitsync.dev/gitsync/source/budget"
)

// classes are the Error classes by their text, so an *Error made in a
// render child (package sandbox) keeps its class in the agent.
var classes = func() map[string]error {
	m := map[string]error{}
	for _, c := range []error{ErrOutsideRoot, ErrTooLarge, ErrOverBudget, errInvalidYAML, errInvalidObject,
		errDuplicate, errNotFound, errRemoteDisabled, errKustomize, errHelm, errPostRender} {
		m[c.Error()] = c
	}
	return m
}()

// errorJSON is an *Error on the wire. The cause travels as its text, which
// the Error contract keeps free of file content, except for the two causes
// callers branch on with errors.As, which keep their type.
type errorJSON struct {
	Class    string                `json:"class"`
	Path     string                `json:"path,omitempty"`
	Line     int                   `json:"line,omitempty"`
	Document int                   `json:"document,omitempty"`
	Detail   string                `json:"detail,omitempty"`
	Cause    string                `json:"cause,omitempty"`
	Objects  *ObjectLimitError     `json:"objects,omitempty"`
	Budget   *budget.ExceededError `json:"budget,omitempty"`
}

// MarshalJSON encodes e for another process; UnmarshalJSON restores it with
// its class and its typed causes.
func (e *Error) MarshalJSON() ([]byte, error) {
	w := errorJSON{Path: e.Path, Line: e.Line, Document: e.Document, Detail: e.Detail}
	if e.Class != nil {
		w.Class = e.Class.Error()
	}
	if e.Err != nil {
		w.Cause = e.Err.Error()
	}
	var ol *ObjectLimitError
	if errors.As(e.Err, &ol) {
		w.Objects = ol
	}
	var be *budget.ExceededError
	if errors.As(e.Err, &be) {
		w.Budget = be
	}
	return json.Marshal(w)
}

// UnmarshalJSON implements json.Unmarshaler; see MarshalJSON.
func (e *Error) UnmarshalJSON(b []byte) error {
	var w errorJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	class, ok := classes[w.Class]
	if !ok {
		return errors.New("render error of unknown class " + w.Class)
	}
	*e = Error{Class: class, Path: w.Path, Line: w.Line, Document: w.Document, Detail: w.Detail}
	switch {
	case w.Objects != nil:
		e.Err = w.Objects
	case w.Budget != nil:
		e.Err = w.Budget
	case w.Cause != "":
		e.Err = errors.New(w.Cause)
	}
	return nil
}
