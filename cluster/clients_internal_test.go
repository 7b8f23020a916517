package cluster

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// TestIdentitiesShareClients: every target of one identity on a cluster
// gets the same uncached clients (each keeps a REST client per kind, so
// one pair per GitSync grew with the fleet), an impersonated identity
// gets its own, and the last target to let go of one drops it.
func TestIdentitiesShareClients(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newClients(cfg, meta.NewDefaultRESTMapper(nil), hc, clientgoscheme.Scheme, 0, 0, context.Background, func() {})
	if err != nil {
		t.Fatal(err)
	}
	get := func(user string) identity {
		t.Helper()
		id, err := c.forUser(user)
		if err != nil {
			t.Fatalf("forUser(%q): %v", user, err)
		}
		return id
	}
	const sa = "system:serviceaccount:team:deployer"
	a1, a2, s1, s2 := get(""), get(""), get(sa), get(sa)
	if a1.direct != a2.direct || a1.dyn != a2.dyn || a1.hc != hc {
		t.Error("two targets of the agent's identity got clients of their own")
	}
	if s1.direct != s2.direct || s1.dyn != s2.dyn || s1.hc != s2.hc {
		t.Error("two targets of one ServiceAccount got clients of their own")
	}
	if s1.direct == a1.direct || s1.hc == a1.hc || s1.cfg.Impersonate.UserName != sa || a1.cfg.Impersonate.UserName != "" {
		t.Error("the ServiceAccount's clients are the agent's: its writes would not be impersonated")
	}
	s1.release()
	s1.release() // a second release of one target changes nothing
	if get(sa).direct != s2.direct {
		t.Error("clients dropped while a target still used them")
	}
	s2.release()
	a1.release()
	if c.agent().direct != a2.direct {
		t.Error("the agent's own clients were dropped")
	}
}
