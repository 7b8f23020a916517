package render

import (
	"errors"
	"path/filepath"

	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/postrender"
)

// postRender makes the source's post-render changes to the objects its
// path rendered to, whatever rendered them. The objects are validated
// first, so a broken manifest is reported where it is; the changed ones
// are validated again by finish (a patch may rename one onto another).
// A failure is an *Error of class errPostRender naming the change, or
// ErrOverBudget; nothing is returned with it.
func postRender(rel string, docs []decodedObject, opts Options) ([]decodedObject, error) {
	if opts.Settings.PostRender.IsZero() {
		return docs, nil
	}
	objs, err := validateObjects(docs)
	if err != nil {
		return nil, err
	}
	path := filepath.ToSlash(rel)
	kustomizeMu.Lock() // kustomize's schema is process-wide state (kustomize.go)
	out, err := postrender.Apply(objs, opts.Settings.PostRender, opts.Budget)
	kustomizeMu.Unlock()
	if err != nil {
		var be *budget.ExceededError
		if errors.As(err, &be) {
			return nil, &Error{Class: ErrOverBudget, Path: path, Detail: "render budget exceeded by post-render changes", Err: err}
		}
		return nil, &Error{Class: errPostRender, Path: path, Detail: "post-render changes failed", Err: err}
	}
	res := make([]decodedObject, len(out))
	for i, o := range out {
		res[i] = decodedObject{Loc: docLocation{Path: path + " (after post-render changes)"}, Object: o.Object}
	}
	return res, nil
}
