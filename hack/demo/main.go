// Command demo is `make demo`: it starts a local control plane and a local Git
// server in the background, points gitsync at a repository made from
// examples/guestbook, and shows a push becoming a change in the cluster, a
// webhook triggering it, and a removed file being pruned.
//
//	bin/demo [up] [--dir .demo] [--gitsync bin/gitsync] [--example examples/guestbook]
//	bin/demo down [--dir .demo]
//
// up runs the whole story and leaves everything running; down stops it.
// Everything lives in --dir: the kubeconfig, the repositories, and the logs
// of each background program. `make demo` and `make demo-down` run these.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// config says where the demo keeps its files and finds its programs.
type config struct {
	dir     string // state, repositories and logs
	gitsync string // the gitsync binary
	example string // the manifests the repository starts with
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	var cfg config
	fs.StringVar(&cfg.dir, "dir", ".demo", "directory for the demo's state, repositories and logs")
	fs.StringVar(&cfg.gitsync, "gitsync", "bin/gitsync", "gitsync binary to run")
	fs.StringVar(&cfg.example, "example", filepath.Join("examples", "guestbook"), "manifests the demo repository starts with")
	cmd := "up"
	args := os.Args[1:]
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	_ = fs.Parse(args)
	var err error
	for _, p := range []*string{&cfg.dir, &cfg.gitsync, &cfg.example} {
		if *p, err = filepath.Abs(*p); err != nil {
			fail(err)
		}
	}
	switch cmd {
	case "up":
		err = up(ctx, cfg)
	case "down":
		err = down(cfg.dir)
	case "serve":
		err = serve(ctx, cfg.dir)
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
