// Command demo is `make demo`: it starts a local control plane and a local Git
// server in the background, points gitsync at a repository made from
// examples/guestbook, and shows a push becoming a change in the cluster, a
// webhook triggering it, and a removed file being pruned.
//
//	go run ./hack/demo          # up: run the whole story, leave everything running
//	go run ./hack/demo down     # stop what up started
//
// Everything lives in .demo/ of the checkout: the kubeconfig, the repositories,
// and the logs of each background program.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := filepath.Abs(".demo")
	if err != nil {
		fail(err)
	}
	cmd := "up"
	if len(os.Args) > 1 {
		cmd = os.Args[1]
	}
	switch cmd {
	case "up":
		err = up(ctx, dir)
	case "down":
		err = down(dir)
	case "serve":
		err = serve(ctx, dir)
	default:
		err = fmt.Errorf("unknown command %q (want up or down)", cmd)
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "demo:", err)
	os.Exit(1)
}

// say prints one step of the story in plain words.
func say(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}
