package controller_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gittest"
)

// TestHealthRecheckGoesFirst is issue 29's "Ready as soon as healthy": a
// GitSync waiting for the health of its Deployment is rechecked as soon as
// the Deployment is available, before the first syncs of five GitSyncs
// queued ahead of it. One worker; it is held by a sixth GitSync whose Git
// host answers only when the test lets it, so the queue's order alone
// decides what runs next, and the apiserver's write order (a watch) shows
// it: the waiting GitSync's Ready comes before any of the five.
//
// Checked: with ownerHandler enqueueing at priority 0 (as any event),
// the five were Ready first (the recheck queued behind them).
func TestHealthRecheckGoesFirst(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns, concurrent: 1})
	ctx := context.Background()

	web := newRepo(t)
	web.commit(map[string]string{"deploy/web.yaml": deployment("web", "nginx:1")})
	w := newGitSync(ns, "waits", web.url(), withWait(10*time.Minute))
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	waitingFor(t, c, client.ObjectKeyFromObject(w), fmt.Sprintf("Deployment/%s/web", ns))

	// The worker's holder: a GitSync whose Git host holds every request
	// until open is closed.
	held := newRepo(t)
	held.commit(map[string]string{"deploy/cm.yaml": configMap("held", "one")})
	g := newGate(t, held)
	if err := c.Create(ctx, newGitSync(ns, "holder", g.url)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the holder's fetch to reach its Git host", func(context.Context) (bool, error) { return g.arrived.Load() > 0, nil })

	first := newRepo(t)
	files := map[string]string{}
	for i := range 5 {
		files[fmt.Sprintf("apps/%d/cm.yaml", i)] = configMap(fmt.Sprintf("first-%d", i), "one")
	}
	first.commit(files)
	var queued []string
	for i := range 5 {
		gs := newGitSync(ns, fmt.Sprintf("first-%d", i), first.url(), func(g *v1.GitSync) { g.Spec.Source.Path = fmt.Sprintf("apps/%d", i) })
		if err := c.Create(ctx, gs); err != nil {
			t.Fatal(err)
		}
		queued = append(queued, gs.Name)
	}
	eventually(t, "the five first syncs queued", func(context.Context) (bool, error) { return a.rec.QueueLen() == 5, nil })

	order := watchReadyOrder(t, ns)
	markAvailable(t, c, ns, "web")
	a.waitAgentSees(t, c, ns, "web")
	eventually(t, "the recheck queued", func(context.Context) (bool, error) { return a.rec.QueueLen() == 6, nil })
	g.release()

	for _, name := range append([]string{"waits"}, queued...) {
		waitCondition(t, c, client.ObjectKey{Namespace: ns, Name: name}, v1.ConditionReady, metav1.ConditionTrue, nil)
	}
	eventually(t, "the watch to see every Ready", func(context.Context) (bool, error) { return len(order.get()) >= 7, nil })
	got := order.get()
	at := slices.Index(got, "waits")
	for _, name := range got[:at] {
		if slices.Contains(queued, name) {
			t.Errorf("Ready order %v: %s was Ready before the waiting GitSync's recheck", got, name)
		}
	}
}

// gate serves a repository on loopback, holding every request until
// release.
type gate struct {
	url     string
	arrived atomic.Int64
	open    chan struct{}
	once    sync.Once
}

func newGate(t *testing.T, r *repo) *gate {
	t.Helper()
	root, name := filepath.Split(r.dir)
	backend, err := gittest.Backend(root)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{open: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		g.arrived.Add(1)
		select {
		case <-g.open:
		case <-req.Context().Done():
			return
		}
		backend.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(g.release)
	g.url = srv.URL + "/" + name
	return g
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// watchReadyOrder records, in the order the apiserver wrote them, the
// GitSyncs of ns as each first turns Ready.
func watchReadyOrder(t *testing.T, ns string) *appliedOrder {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &v1.GitSyncList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	o := &appliedOrder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			gs, ok := ev.Object.(*v1.GitSync)
			if !ok || !meta.IsStatusConditionTrue(gs.Status.Conditions, v1.ConditionReady) {
				continue
			}
			o.mu.Lock()
			if !slices.Contains(o.names, gs.Name) {
				o.names = append(o.names, gs.Name)
			}
			o.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.Stop(); cancel(); <-done })
	return o
}
