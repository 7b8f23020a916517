package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

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

	gitURL, srv, err := serveGit(filepath.Join(dir, "git"), gitAddr)
	if err != nil {
		return err
	}
	defer srv.Close()

	st, _ := json.Marshal(state{Kubeconfig: kubeconfig, GitURL: gitURL})
	if err := os.WriteFile(filepath.Join(dir, "state.json"), st, 0o600); err != nil {
		return err
	}
	fmt.Println("control plane and Git server are up")
	<-ctx.Done()
	fmt.Println("stopping")
	return nil
}

// serveGit serves the bare repositories under root over smart HTTP (git
// http-backend behind net/http/cgi) on addr.
func serveGit(root, addr string) (string, *http.Server, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", nil, err
	}
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return "", nil, fmt.Errorf("find git: %w", err)
	}
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	}
	mux := http.NewServeMux()
	mux.Handle("/git/", http.StripPrefix("/git", backend))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("Git server: %w (is another demo running? pick another address with --git-addr)", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "git server:", err)
		}
	}()
	return "http://" + l.Addr().String() + "/git", srv, nil
}
