package controller

import (
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// clusterClients are the connections to one cluster that every GitSync
// writing to it shares: one REST mapper (discovery runs once per cluster,
// not once per GitSync), one client-side request budget, and one HTTP client
// per identity (the agent's own, or an impersonated ServiceAccount's:
// impersonation is a header added by the HTTP client's transport, so
// identities never share one).
type clusterClients struct {
	// cfg is the cluster's config with the shared rate limiter.
	cfg    *rest.Config
	mapper meta.RESTMapper
	// agent is the HTTP client of the agent's own identity.
	agent *http.Client

	mu     sync.Mutex
	byUser map[string]*identityClient
}

// identityClient is an impersonating HTTP client and the number of targets
// using it; the last one to go closes its idle connections.
type identityClient struct {
	hc    *http.Client
	users int
}

// newClusterClients shares mapper and hc (built from cfg) between every
// GitSync of the cluster, with one rate limiter of qps and burst for all of
// them; qps <= 0 turns client-side limiting off.
func newClusterClients(cfg *rest.Config, mapper meta.RESTMapper, hc *http.Client, qps float32, burst int) *clusterClients {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	if qps > 0 {
		cfg.QPS, cfg.Burst = qps, max(burst, 1)
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(qps, cfg.Burst)
	}
	return &clusterClients{cfg: cfg, mapper: mapper, agent: hc, byUser: map[string]*identityClient{}}
}

// identity is the rest config and HTTP client of one identity on a cluster,
// and release, which a target calls when it stops using them.
type identity struct {
	cfg     *rest.Config
	hc      *http.Client
	release func()
}

// forUser returns the identity of user ("" for the agent's own).
func (c *clusterClients) forUser(user string) (identity, error) {
	cfg := rest.CopyConfig(c.cfg)
	if user == "" {
		return identity{cfg: cfg, hc: c.agent, release: func() {}}, nil
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c.mu.Lock()
	defer c.mu.Unlock()
	ic, ok := c.byUser[user]
	if !ok {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return identity{}, fmt.Errorf("http client for %s: %w", user, err)
		}
		ic = &identityClient{hc: hc}
		c.byUser[user] = ic
	}
	ic.users++
	var once sync.Once
	return identity{cfg: cfg, hc: ic.hc, release: func() { once.Do(func() { c.drop(user, ic) }) }}, nil
}

func (c *clusterClients) drop(user string, ic *identityClient) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ic.users--
	if ic.users > 0 || c.byUser[user] != ic {
		return
	}
	delete(c.byUser, user)
	ic.hc.CloseIdleConnections()
}
