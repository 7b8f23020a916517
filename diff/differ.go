package diff

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/object"
)

// Verdict is the outcome of comparing one desired object with its live state.
type Verdict string

const (
	// InSync means applying the desired object would change nothing.
	InSync Verdict = "in-sync"
	// Drifted means applying the desired object would change the live one
	// (values, or the fields gitsync owns).
	Drifted Verdict = "drifted"
	// Missing means the object does not exist in the cluster.
	Missing Verdict = "missing"
)

// Result is the outcome of one Diff.
type Result struct {
	// Verdict says whether an apply is needed.
	Verdict Verdict
	// DryRun is true when a server-side apply dry-run decided the verdict,
	// now or (with Memoised) in an earlier call.
	DryRun bool
	// Memoised is true when the verdict came from the in-sync memo: an
	// earlier dry-run decided it for the same desired object and live
	// resourceVersion, and no request was made.
	Memoised bool
	// Text is a unified YAML diff from the live object to what it would
	// become after the apply, Secret values masked. Set only when
	// Options.Text is true and the verdict is not InSync.
	Text string
	// Fields names what the apply would change, when the verdict is
	// Drifted: JSON pointers of the fields whose values differ (never the
	// values), or the fields whose ownership changes.
	Fields []string
	// Merged is what the live object would become: the dry-run result
	// (Secret values masked), or nil when the verdict was decided locally.
	Merged *unstructured.Unstructured
}

// Options configure a Differ.
type Options struct {
	// FieldManager is the server-side apply field manager whose owned fields
	// are compared and which the dry-run applies as; it must be the manager
	// the applier writes with.
	FieldManager string
	// Text asks for a unified diff in Result.Text. It costs a YAML
	// rendering per drifted or missing object, so the controller leaves it
	// off and the CLI turns it on.
	Text bool
	// MemoSize bounds the in-sync memo (one entry per object). Zero or less
	// disables memoisation.
	MemoSize int
}

// DefaultOptions returns the options the controller uses: gitsync's field
// manager, no text, and a memo large enough for a few thousand objects.
func DefaultOptions() Options {
	return Options{FieldManager: v1.FieldManager, MemoSize: 16384}
}

// ErrNoClient is wrapped in the DryRunError returned when an object needs a
// dry-run to be decided but the Differ was built without a client.
var ErrNoClient = errors.New("no client for a server-side dry-run")

// DryRunError reports a failed server-side apply dry-run. Callers branch on it
// with errors.As; the cause (e.g. an apierrors status) is available through
// Unwrap. The cause is the apiserver's error as it came, which for a Secret
// may quote a value: the applier, through which every diff reaches a user,
// rebuilds errors about Secrets without their text (apply/redact.go).
type DryRunError struct {
	// ID is the object whose dry-run failed.
	ID object.ID
	// Err is the cause.
	Err error
}

func (e *DryRunError) Error() string { return fmt.Sprintf("%s dry-run failed: %v", e.ID, e.Err) }

// Unwrap returns the cause.
func (e *DryRunError) Unwrap() error { return e.Err }

// Differ compares desired objects with live ones. It is safe for concurrent
// use.
type Differ struct {
	client client.Client
	opts   Options
	memo   *memo
}

// New returns a Differ. c is used only for server-side apply dry-runs; it may
// be nil, in which case objects that cannot be decided locally fail with a
// DryRunError wrapping ErrNoClient.
func New(c client.Client, opts Options) (*Differ, error) {
	if opts.FieldManager == "" {
		return nil, errors.New("diff: options need a field manager")
	}
	return &Differ{client: c, opts: opts, memo: newMemo(opts.MemoSize)}, nil
}
