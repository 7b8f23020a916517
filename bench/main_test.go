package bench

import (
	"flag"
	"os"
	"testing"

	"gitsync.dev/gitsync/internal/testenv"
)

var env *testenv.Env

// TestMain starts the control plane only when benchmarks were asked for, so
// `go test ./...` passes through this package in no time.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	os.Exit(testenv.Main(m, testenv.Options{}, &env))
}
