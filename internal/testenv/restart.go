package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// StopAPIServer stops kube-apiserver and leaves etcd running: clients see
// their connections refused until StartAPIServer. Programs that depend on
// the apiserver (controller-manager, kwok) keep running and reconnect.
func (e *Env) StopAPIServer() error {
	if e.env == nil || e.env.ControlPlane.APIServer == nil {
		return errors.New("no apiserver to stop")
	}
	if err := e.env.ControlPlane.APIServer.Stop(); err != nil {
		return fmt.Errorf("stop kube-apiserver: %w", err)
	}
	return nil
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
	url := e.Config.Host + "/readyz"
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		resp, err := c.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("kube-apiserver not ready after restart: %w\n--- last lines of kube-apiserver ---\n%s", err, e.apiOut.Tail(30))
	}
	return nil
}
