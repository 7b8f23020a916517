package bench

import (
	"flag"
	"github.com/go-logr/logr"
	"os"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
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
	ctrllog.SetLogger(logr.Discard()) // informers log through it; nothing to show in benchmarks
	os.Exit(testenv.Main(m, testenv.Options{}, &env))
}
