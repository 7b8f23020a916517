package apply

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/diff"
)

// decider tells whether desired must be written over live; *diff.Differ is
// the implementation.
type decider interface {
	Diff(ctx context.Context, desired, live *unstructured.Unstructured) (diff.Result, error)
}

var _ decider = (*diff.Differ)(nil)

// newDiffer builds the Differ the Applier decides with: same field manager, and
// a client for the dry-runs the cache cannot decide.
func newDiffer(cfg *rest.Config, hc *http.Client, mapper meta.RESTMapper, opts Options) (*diff.Differ, client.Client, error) {
	c := opts.Client
	if c == nil {
		var err error
		if c, err = client.New(cfg, client.Options{HTTPClient: hc, Mapper: mapper}); err != nil {
			return nil, nil, fmt.Errorf("apply: client: %w", err)
		}
	}
	dopts := diff.DefaultOptions()
	dopts.FieldManager = opts.FieldManager
	dopts.Text = opts.Diff
	d, err := diff.New(c, dopts)
	if err != nil {
		return nil, nil, fmt.Errorf("apply: differ: %w", err)
	}
	return d, c, nil
}

// decide returns the diff verdict. A dry-run the apiserver rejects (a
// conflict, an immutable field, an invalid object) means the object must be
// written: the real apply (or, with Options.DryRun, its dry-run) then fails
// the same way and write reports it with the right type.
func (a *Applier) decide(ctx context.Context, desired, live *unstructured.Unstructured) (diff.Result, error) {
	res, err := a.differ.Diff(ctx, desired, live)
	var dre *diff.DryRunError
	if errors.As(err, &dre) && !fatal(err) && !errors.Is(err, diff.ErrNoClient) {
		return diff.Result{Verdict: diff.Drifted}, nil
	}
	return res, err
}
