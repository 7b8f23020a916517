package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// StopAPIServer kills kube-apiserver (SIGKILL, as a crashed or evicted
// apiserver) and leaves etcd running: in-flight requests break and new
// ones are refused until StartAPIServer. A graceful stop would wait for
// every open watch to drain, tens of seconds. Programs that depend on the
// apiserver (controller-manager, kwok) keep running and reconnect.
func (e *Env) StopAPIServer() error {
	if e.env == nil || e.env.ControlPlane.APIServer == nil {
		return errors.New("no apiserver to stop")
	}
	api := e.env.ControlPlane.APIServer
	pid, err := findProcess("kube-apiserver", "--cert-dir="+api.CertDir)
	if err != nil {
		return fmt.Errorf("stop kube-apiserver: %w", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("stop kube-apiserver (pid %d): %w", pid, err)
	}
	// envtest reaps its child; until it has, its Stop fails to signal the
	// dead process group, after that it has nothing left to do.
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return api.Stop() == nil, nil
	})
	if err != nil {
		return fmt.Errorf("kube-apiserver (pid %d) not reaped after SIGKILL: %w", pid, err)
	}
	return nil
}

// findProcess returns the pid of the one running program named name whose
// command line has arg, which singles out the process this Env started.
func findProcess(name, arg string) (int, error) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if filepath.Base(args[0]) == name && slices.Contains(args[1:], arg) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no running %s with %s", name, arg)
}

// StartAPIServer starts kube-apiserver again on the same port, certificates
// and etcd, and returns once it serves every API group again (CRDs and
// aggregated APIs included), so Config, Kubeconfig and Client keep working.
func (e *Env) StartAPIServer(ctx context.Context) error {
	api := e.env.ControlPlane.APIServer
	// The listening port was released by the stop; if something else took
	// it meanwhile, say so instead of a confusing health-check timeout.
	if l, err := net.Listen("tcp", net.JoinHostPort(api.SecureServing.Address, api.SecureServing.Port)); err != nil {
		return fmt.Errorf("restart kube-apiserver: its port is taken: %w", err)
	} else {
		_ = l.Close()
	}
	if err := api.Start(); err != nil {
		return fmt.Errorf("restart kube-apiserver: %w\n--- last lines of kube-apiserver ---\n%s", err, e.apiOut.Tail(30))
	}
	return e.waitReady(ctx)
}

// RestartAPIServer is StopAPIServer followed by StartAPIServer.
func (e *Env) RestartAPIServer(ctx context.Context) error {
	if err := e.StopAPIServer(); err != nil {
		return err
	}
	return e.StartAPIServer(ctx)
}

// waitReady polls /readyz (which includes the post-start hooks that make
// CRDs and API discovery available) with the administrator's credentials.
func (e *Env) waitReady(ctx context.Context) error {
	cfg := rest.CopyConfig(e.Config)
	cfg.Timeout = 2 * time.Second
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	url := strings.TrimRight(e.Config.Host, "/") + "/readyz"
	last := ""
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		resp, err := c.Get(url)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("kube-apiserver not ready after restart: %w; last /readyz: %s", err, last)
	}
	return nil
}
