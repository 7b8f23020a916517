// Package sandboxtest builds the render child tests start, as the agent's
// own binary is built: static (no cgo) and without the race detector, so a
// test binary built with -race still tests the limits the agent ships with.
package sandboxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	once  sync.Once
	built string
	err   error
	out   []byte
)

// Child returns the path of a render child, built once per test binary
// (the Go build cache makes it a link step after the first time).
func Child(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		dir, derr := os.MkdirTemp("", "gitsync-render-child-")
		if derr != nil {
			err = derr
			return
		}
		built = filepath.Join(dir, "child")
		cmd := exec.Command("go", "build", "-trimpath", "-o", built, "gitsync.dev/gitsync/source/sandbox/sandboxtest/child")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err = cmd.CombinedOutput()
	})
	if err != nil {
		t.Fatalf("build the render child: %v\n%s", err, out)
	}
	return built
}
