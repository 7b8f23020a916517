// This file is added to package main of cmd/gitsync only by the scale
// benchmark, through `go build -overlay`, when GITSYNC_BENCH_PPROF_DIR is
// set: the agent then serves net/http/pprof on $GITSYNC_PPROF_ADDR. It is not
// part of any build of the work tree.

package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	if addr := os.Getenv("GITSYNC_PPROF_ADDR"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
