package controller_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gittest"
)

// appliedOrder watches the GitSyncs of ns and records, in the order the
// apiserver wrote them, each one's first status naming commit as applied.
type appliedOrder struct {
	mu    sync.Mutex
	names []string
}

func watchAppliedOrder(t *testing.T, ns string, commit func() string) *appliedOrder {
	t.Helper()
	o := &appliedOrder{}
	watchGitSyncs(t, ns, func(gs *v1.GitSync) {
		c := commit()
		if c == "" || !strings.Contains(gs.Status.LastAppliedRevision, c) {
			return
		}
		o.mu.Lock()
		if !slices.Contains(o.names, gs.Name) {
			o.names = append(o.names, gs.Name)
		}
		o.mu.Unlock()
	})
	return o
}

// watchGitSyncs calls see with every GitSync of ns the apiserver writes
// from now on, in order, until the test ends: a watch sees each write, not
// a sample of them.
func watchGitSyncs(t *testing.T, ns string, see func(*v1.GitSync)) {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &v1.GitSyncList{}, client.InNamespace(ns))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if gs, ok := ev.Object.(*v1.GitSync); ok {
				see(gs)
			}
		}
	}()
	t.Cleanup(func() { w.Stop(); cancel(); <-done })
}

func (o *appliedOrder) get() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.names)
}

// TestMonorepoChangedPathFirst: 30 GitSyncs follow 30 paths of one
// repository, reconciled one at a time (--concurrent 1). A push changing
// one path, announced to all 30 in index order (as a webhook does), is
// applied to the changed path before any other GitSync writes the new
// revision: the first reconcile to fetch it raises the GitSyncs whose
// content changed in the work queue and, its own content unchanged, steps
// aside. Every GitSync still ends on the new revision.
//
// Checked without the ranking (yieldToChanged returning false): app-17's
// write came 18th, after app-00..app-16.
func TestMonorepoChangedPathFirst(t *testing.T) {
	const n, changed = 30, "app-17"
	c := setup(t)
	ns := env.Namespace(t)
	r := newRepo(t)
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("apps/%02d/cm.yaml", i)] = configMap(fmt.Sprintf("cm-%02d", i), "one")
	}
	r.commit(files)
	root, name := filepath.Split(r.dir)
	srv := gittest.New(t, root, gittest.Options{})
	url := srv.URL + "/" + name
	a := startAgent(t, agentOptions{namespace: ns, concurrent: 1})
	ctx := context.Background()
	var keys []client.ObjectKey
	for i := range n {
		gs := newGitSync(ns, fmt.Sprintf("app-%02d", i), url, func(g *v1.GitSync) { g.Spec.Source.Path = fmt.Sprintf("apps/%02d", i) })
		if err := c.Create(ctx, gs); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, client.ObjectKeyFromObject(gs))
	}
	for _, k := range keys {
		waitCondition(t, c, k, v1.ConditionReady, metav1.ConditionTrue, nil)
	}

	var mu sync.Mutex
	pushed := ""
	order := watchAppliedOrder(t, ns, func() string { mu.Lock(); defer mu.Unlock(); return pushed })
	commit := r.commit(map[string]string{"apps/17/cm.yaml": configMap("cm-17", "two")})
	mu.Lock()
	pushed = commit
	mu.Unlock()
	at := time.Now()
	for _, k := range keys {
		a.rec.TriggerAt(k, at)
	}
	for _, k := range keys {
		waitCondition(t, c, k, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
			return strings.Contains(g.Status.LastAppliedRevision, commit)
		})
	}
	eventually(t, "the watch to see all 30 writes", func(context.Context) (bool, error) { return len(order.get()) == n, nil })
	if got := order.get(); got[0] != changed {
		t.Errorf("GitSyncs wrote the new revision in this order: %v; want %s first", got, changed)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cm-17"}, cm); err != nil || cm.Data["value"] != "two" {
		t.Errorf("cm-17 = %v (err %v), want value two", cm.Data, err)
	}
}
