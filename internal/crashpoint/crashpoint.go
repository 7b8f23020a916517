package crashpoint

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// The points the agent defines, in the order one reconcile reaches them.
const (
	// BeforeApply is reached after the pending inventory was recorded and
	// before any object is applied.
	BeforeApply = "before-apply"
	// AfterApply is reached after the objects were applied and before the
	// inventory recording them is saved.
	AfterApply = "after-apply"
	// AfterPrune is reached after stale objects were deleted and before the
	// inventory without them is saved.
	AfterPrune = "after-prune"
	// BeforeStatus is reached right before the reconcile's status write.
	BeforeStatus = "before-status"
	// InFinalizer is reached inside the finalizer, after the cleanup and
	// before the finalizer is released.
	InFinalizer = "in-finalizer"
)

// EnvVar names the point to crash at; MarkerEnvVar a file created just before.
const (
	EnvVar       = "GITSYNC_CRASH_AT"
	MarkerEnvVar = "GITSYNC_CRASH_MARKER"
)

var (
	point, marker = parse(os.Getenv(EnvVar)), os.Getenv(MarkerEnvVar)
	hits          atomic.Int64
)

type target struct {
	name string
	nth  int64
}

func parse(v string) target {
	name, n, ok := strings.Cut(v, "@")
	t := target{name: name, nth: 1}
	if ok {
		if i, err := strconv.ParseInt(n, 10, 64); err == nil && i > 0 {
			t.nth = i
		}
	}
	return t
}

// Hit kills the process when name is the point GITSYNC_CRASH_AT asks for
// (and this is its N-th hit); otherwise it does nothing.
func Hit(name string) {
	if point.name == "" || point.name != name {
		return
	}
	if hits.Add(1) != point.nth {
		return
	}
	if marker != "" {
		_ = os.WriteFile(marker, []byte(name+"\n"), 0o600)
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is delivered asynchronously; never go on
}
