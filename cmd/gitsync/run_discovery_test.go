package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/testenv"
)

// TestRunWaitsForDiscovery: `gitsync run --install-crds` against an
// apiserver whose discovery does not serve gitsync.dev/v1alpha1 yet (the
// CRD is Established, but a proxy answers the group version's discovery
// with 404, as a lagging discovery does) keeps waiting instead of exiting
// with "no matches for kind", and once discovery serves the kind it
// reconciles a GitSync.
//
// Checked by removing the apply.WaitServed call from Run: the agent then
// exits at its first NoMatch, while the proxy is still saying 404.
func TestRunWaitsForDiscovery(t *testing.T) {
	ns := env.Namespace(t)
	proxy := env.NewFaultProxy(t)
	proxy.LegacyDiscovery() // one request per group version, so the rule hides gitsync.dev alone
	lag := proxy.MustInject(t, testenv.Fault{Method: http.MethodGet, Path: `^/apis/gitsync\.dev/v1alpha1/?$`, Status: http.StatusNotFound})
	p := startAgentProcHeld(t, proxy.Kubeconfig, ns) // held by discovery before it listens

	// Asked, told "not served", and asked again: still running.
	poll(t, "the agent asking discovery again", func(context.Context) (bool, error) {
		select {
		case <-p.done:
			return false, fmt.Errorf("gitsync run exited while discovery lagged: %v", p.err)
		default:
		}
		return lag.Matched() >= 3, nil
	})
	lag.Clear()

	c := gitsyncClient(t)
	dir := newRunRepo(t)
	commit := commitFiles(t, dir, map[string]string{"deploy/a.yaml": configMap("a", "value", "1")})
	gs := &gitsyncv1.GitSync{
		ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: ns},
		Spec: gitsyncv1.GitSyncSpec{
			Source:   gitsyncv1.GitSource{URL: "file://" + dir, Ref: gitsyncv1.GitRef{Branch: "main"}, Path: "deploy"},
			Interval: metav1.Duration{Duration: time.Hour},
		},
	}
	poll(t, "create GitSync", func(ctx context.Context) (bool, error) { return c.Create(ctx, gs.DeepCopy()) == nil, nil })
	waitApplied(t, c, client.ObjectKeyFromObject(gs), commit)
	select {
	case <-p.done:
		t.Fatalf("gitsync run exited: %v", p.err)
	default:
	}
}
