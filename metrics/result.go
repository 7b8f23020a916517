package metrics

// Result is how one reconcile of a GitSync ended: the result label of
// gitsync_reconcile_duration_seconds.
type Result string

// The results a reconcile ends with.
const (
	// Success: the revision is applied (and, with spec.wait, healthy).
	Success Result = "success"
	// Waiting: applied, waiting for the objects' health or a dependency.
	Waiting Result = "waiting"
	// Stalled: a failure retrying cannot fix; the interval asks again.
	Stalled Result = "stalled"
	// Retry: a transient failure, retried with backoff.
	Retry Result = "retry"
	// Suspended: spec.suspend is set; nothing was done.
	Suspended Result = "suspended"
	// Deleted: the GitSync is gone and its finalizer released.
	Deleted Result = "deleted"
	// Yielded: the revision left this GitSync's content alone and it
	// stepped aside for GitSyncs whose content changed.
	Yielded Result = "yielded"
)

// Results lists every Result, in the order the metric's help names them.
func Results() []Result {
	return []Result{Success, Waiting, Stalled, Retry, Suspended, Deleted, Yielded}
}

func resultNames() []string {
	out := make([]string, 0, len(Results()))
	for _, r := range Results() {
		out = append(out, string(r))
	}
	return out
}
