// Command demo is `make demo`: it starts a local control plane and a local Git
// server in the background, points gitsync at a repository made from
// examples/guestbook, and shows a push becoming a change in the cluster, a
// webhook triggering it, and a removed file being pruned.
//
//	bin/demo [up] [--dir .demo] [--gitsync bin/gitsync] [--example examples/guestbook]
//	         [--examples examples] [--git-addr 127.0.0.1:9080] [--force]
//	bin/demo down [--dir .demo]
//
// up runs the whole story and leaves everything running; down stops it.
// Everything lives in --dir: the kubeconfig, the repositories, and the logs
// of each background program. `make demo` and `make demo-down` run these.
//
// The Git server also serves every example, as the repository
// http://<git-addr>/git/gitsync.git holding examples/, so the GitSyncs of
// examples/gitsyncs-local work against the demo without a network.
// up refuses to discard a work copy holding changes of yours (commits the
// demo did not make, or uncommitted edits) unless --force is given.
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
	// examples is the directory served as examples/ of the gitsync.git repository.
	examples string
	// gitAddr is where the Git server listens; fixed by default so the
	// GitSyncs of examples/gitsyncs-local can name it.
	gitAddr string
	// force discards a work copy holding your changes.
	force bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	var cfg config
	fs.StringVar(&cfg.dir, "dir", ".demo", "directory for the demo's state, repositories and logs")
	fs.StringVar(&cfg.gitsync, "gitsync", "bin/gitsync", "gitsync binary to run")
	fs.StringVar(&cfg.example, "example", filepath.Join("examples", "guestbook"), "manifests the demo repository starts with")
	fs.StringVar(&cfg.examples, "examples", "examples", "directory served as examples/ of the gitsync.git repository")
	fs.StringVar(&cfg.gitAddr, "git-addr", defaultGitAddr, "address of the demo's Git server (examples/gitsyncs-local names the default)")
	fs.BoolVar(&cfg.force, "force", false, "discard the demo's work copy even if it holds commits or edits of yours")
	cmd := "up"
	args := os.Args[1:]
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	_ = fs.Parse(args)
	var err error
	for _, p := range []*string{&cfg.dir, &cfg.gitsync, &cfg.example, &cfg.examples} {
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
		err = serve(ctx, cfg.dir, cfg.gitAddr)
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

// defaultGitAddr is the demo Git server's address unless --git-addr says
// otherwise; examples/gitsyncs-local/kustomization.yaml names it.
const defaultGitAddr = "127.0.0.1:9080"

// say prints one step of the story in plain words.
func say(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}
