package render

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"

	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/git"
)

// kustomizeMu serialises kustomize builds: kustomize keeps its OpenAPI
// schema in package-level state that concurrent builds race on.
var kustomizeMu sync.Mutex

// kustomizeOptions are the only kustomize settings we run with: load
// restricted to each kustomization's root, every plugin kind off (so no exec
// or container functions and no Helm), no managed-by label, input order.
// Remote bases are refused before kustomize sees them (see checkKustomization).
func kustomizeOptions() *krusty.Options {
	o := krusty.MakeDefaultOptions()
	o.LoadRestrictions = types.LoadRestrictionsRootOnly
	o.PluginConfig = types.DisabledPluginConfig()
	o.AddManagedbyLabel = false
	return o
}

// renderKustomize builds the kustomization in rel on a file system confined
// to the repository and decodes its output.
func renderKustomize(ctx context.Context, repo *repoRoot, rel string, opts Options) ([]decodedObject, error) {
	fsys := newConfinedFS(ctx, repo, opts)
	resources, err := runKustomize(fsys, filepath.Join(repo.dir, rel))
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		// A violation seen by the file system is the real cause; kustomize
		// flattens the errors it is given into text.
		if v := fsys.violation(); v != nil {
			return nil, v
		}
		var re *Error
		if errors.As(err, &re) {
			return nil, re
		}
		if secrets := fsys.readSecrets(); len(secrets) > 0 {
			return nil, &Error{Class: errKustomize, Path: filepath.ToSlash(rel), Detail: "kustomize build failed",
				Err: &withheldError{Tool: "kustomize", Sources: secrets}}
		}
		// Paths in kustomize's messages are absolute; show them relative.
		msg := strings.ReplaceAll(err.Error(), repo.dir+string(filepath.Separator), "")
		msg = strings.ReplaceAll(msg, repo.dir, ".")
		return nil, &Error{Class: errKustomize, Path: filepath.ToSlash(rel), Detail: "kustomize build failed",
			Err: errors.New(git.RedactText(msg))}
	}
	out := make([]decodedObject, 0, len(resources))
	for i, raw := range resources {
		loc := docLocation{Path: filepath.ToSlash(rel) + " (kustomize output)", Document: i + 1}
		var v any
		if err := utiljson.Unmarshal(raw, &v); err != nil {
			return nil, &Error{Class: errInvalidObject, Path: loc.Path, Document: loc.Document,
				Detail: "kustomize produced invalid JSON", Err: err}
		}
		objs, err := expandList(loc, v)
		if err == nil {
			err = opts.countObjects(loc, len(objs)) // render_limit.go
		}
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// runKustomize runs krusty and returns each resource as JSON. A panic inside
// kustomize on hostile input becomes an error instead of taking down the agent.
func runKustomize(fsys *confinedFS, dir string) (out [][]byte, err error) {
	kustomizeMu.Lock()
	defer kustomizeMu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			// The panic value is not quoted: it may hold file content.
			out, err = nil, errors.New("kustomize panicked on this input")
		}
	}()
	m, err := krusty.MakeKustomizer(kustomizeOptions()).Run(fsys, dir)
	if err != nil {
		return nil, err
	}
	if err := fsys.opts.objects.expect(kustomizeOutput(fsys.repo, dir), m.Size()); err != nil {
		return nil, err // render_limit.go: refused before each resource is encoded
	}
	for _, r := range m.Resources() {
		b, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("%s encode failed: %w", r.CurId(), err)
		}
		if err := fsys.opts.Budget.Charge(budget.StageKustomize, int64(len(b))); err != nil {
			return nil, overBudget(kustomizeOutput(fsys.repo, dir), err)
		}
		out = append(out, b)
	}
	return out, nil
}
