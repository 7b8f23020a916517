package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/internal/testenv"
)

// state is what the background server tells the foreground story.
type state struct {
	Kubeconfig string `json:"kubeconfig"`
	GitURL     string `json:"gitURL"` // base URL of the loopback Git server, e.g. http://127.0.0.1:PORT/git
}

// serve runs in the background: the control plane (etcd, kube-apiserver,
// controller-manager, scheduler, kwok) and a smart-HTTP Git server on loopback,
// until it is signalled.
func serve(ctx context.Context, dir, gitAddr string) error {
	env, err := testenv.Start(ctx, testenv.Options{Workloads: true, StartTimeout: 3 * time.Minute})
	if err != nil {
		return err
	}
	defer env.Stop()

	kubeconfig := filepath.Join(dir, "kubeconfig")
	data, err := os.ReadFile(env.Kubeconfig)
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		return err
	}

	gitRoot := filepath.Join(dir, "git")
	if err := os.MkdirAll(gitRoot, 0o755); err != nil {
		return err
	}
	git, err := gittest.Start(gitRoot, gittest.Options{Addr: gitAddr, Prefix: "/git"})
	if err != nil {
		return fmt.Errorf("%w (is another demo running? pick another address with --git-addr)", err)
	}
	defer git.Close()

	st, _ := json.Marshal(state{Kubeconfig: kubeconfig, GitURL: git.URL})
	if err := os.WriteFile(filepath.Join(dir, "state.json"), st, 0o600); err != nil {
		return err
	}
	fmt.Println("control plane and Git server are up")
	<-ctx.Done()
	fmt.Println("stopping")
	return nil
}
