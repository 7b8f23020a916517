// Command gitsync makes a Kubernetes cluster look like a directory of
// manifests in Git: as an agent in the cluster (gitsync run) or from a laptop
// or CI job (gitsync diff, apply, status).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	root := newRootCmd()
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	stop()
	os.Exit(reportError(stderr, err))
}
