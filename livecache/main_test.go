package livecache_test

import (
	"os"
	"testing"

	"gitsync.dev/gitsync/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{}, &env)) }
