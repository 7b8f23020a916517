package cluster

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// clients are the connections to one cluster that every GitSync
// writing to it shares: one REST mapper (discovery runs once per cluster,
// not once per GitSync), one client-side request budget, and one HTTP client
// and one pair of uncached clients per identity (the agent's own, or an
// impersonated ServiceAccount's: impersonation is a header added by the HTTP
// client's transport, so identities never share one). A client keeps a REST
// client per kind it has used, so one pair per GitSync grew with the fleet.
type clients struct {
	// cfg is the cluster's config with the shared rate limiter.
	cfg    *rest.Config
	mapper meta.RESTMapper
	scheme *runtime.Scheme
	// caps are what Helm templates see of the cluster, read once and kept
	// while nothing it serves changes.
	caps *capabilityWatch

	mu     sync.Mutex
	byUser map[string]*identityClient
}

// identityClient is one identity's clients and the number of targets using
// them; the last one to go closes the idle connections of an impersonating
// identity.
type identityClient struct {
	identity
	users int
}

// newClients shares mapper and hc (built from cfg, the agent's own
// identity) between every GitSync of the cluster, with one rate limiter of
// qps and burst for all of them; qps <= 0 turns client-side limiting off.
// The capabilities' watches live as long as runCtx's context; changed is
// told when the capabilities change.
func newClients(cfg *rest.Config, mapper meta.RESTMapper, hc *http.Client, scheme *runtime.Scheme, qps float32, burst int,
	runCtx func() context.Context, changed func()) (*clients, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	if qps > 0 {
		cfg.QPS, cfg.Burst = qps, max(burst, 1)
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(qps, cfg.Burst)
	}
	c := &clients{cfg: cfg, mapper: mapper, scheme: scheme, byUser: map[string]*identityClient{}}
	agent, err := c.newIdentity(cfg, hc)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	c.caps = newCapabilityWatch(disc, md, runCtx, changed)
	// The agent's own identity is never released.
	c.byUser[""] = &identityClient{identity: agent, users: 1}
	return c, nil
}

// identity is the rest config and clients of one identity on a cluster,
// and release, which a target calls when it stops using them.
type identity struct {
	cfg    *rest.Config
	hc     *http.Client
	direct client.WithWatch
	dyn    dynamic.Interface
	// allowed is what the identity's access reviews allowed.
	allowed *Allowed
	release func()
}

func (c *clients) newIdentity(cfg *rest.Config, hc *http.Client) (identity, error) {
	direct, err := client.NewWithWatch(cfg, client.Options{Scheme: c.scheme, HTTPClient: hc, Mapper: c.mapper})
	if err != nil {
		return identity{}, err
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return identity{}, err
	}
	return identity{cfg: cfg, hc: hc, direct: direct, dyn: dyn, allowed: &Allowed{}}, nil
}

// agent returns the agent's own identity.
func (c *clients) agent() identity {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byUser[""].identity
}

// forUser returns the identity of user ("" for the agent's own).
func (c *clients) forUser(user string) (identity, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if user == "" {
		id := c.byUser[""].identity
		id.release = func() {}
		return id, nil
	}
	ic, ok := c.byUser[user]
	if !ok {
		cfg := rest.CopyConfig(c.cfg)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return identity{}, fmt.Errorf("http client for %s: %w", user, err)
		}
		id, err := c.newIdentity(cfg, hc)
		if err != nil {
			return identity{}, fmt.Errorf("clients for %s: %w", user, err)
		}
		ic = &identityClient{identity: id}
		c.byUser[user] = ic
	}
	ic.users++
	var once sync.Once
	id := ic.identity
	id.release = func() { once.Do(func() { c.drop(user, ic) }) }
	return id, nil
}

func (c *clients) drop(user string, ic *identityClient) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ic.users--
	if ic.users > 0 || c.byUser[user] != ic {
		return
	}
	delete(c.byUser, user)
	ic.hc.CloseIdleConnections()
}
