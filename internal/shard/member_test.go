package shard

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// cut is a LeasesGetter whose requests fail while the replica is cut off
// from the apiserver (a partition, or a process stopped by the kernel).
type cut struct {
	coordclient.LeasesGetter
	off *atomic.Bool
}

func (c cut) Leases(ns string) coordclient.LeaseInterface {
	return cutLeases{c.LeasesGetter.Leases(ns), c.off}
}

type cutLeases struct {
	coordclient.LeaseInterface
	off *atomic.Bool
}

var errCut = errors.New("cut off from the apiserver")

func (c cutLeases) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	if c.off.Load() {
		return nil, errCut
	}
	return c.LeaseInterface.Get(ctx, name, o)
}

func (c cutLeases) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if c.off.Load() {
		return nil, errCut
	}
	return c.LeaseInterface.Create(ctx, l, o)
}

func (c cutLeases) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if c.off.Load() {
		return nil, errCut
	}
	return c.LeaseInterface.Update(ctx, l, o)
}

func (c cutLeases) List(ctx context.Context, o metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	if c.off.Load() {
		return nil, errCut
	}
	return c.LeaseInterface.List(ctx, o)
}

func (c cutLeases) Delete(ctx context.Context, name string, o metav1.DeleteOptions) error {
	if c.off.Load() {
		return errCut
	}
	return c.LeaseInterface.Delete(ctx, name, o)
}

// group runs replicas that hammer Acquire on every key, counting how many
// replicas run each key at once.
type group struct {
	t       *testing.T
	ns      string
	keys    []string
	holders map[string]*atomic.Int32
	double  atomic.Int64 // runs that found another replica running their key
	runs    atomic.Int64
}

type replica struct {
	m      *Member
	off    atomic.Bool
	cancel context.CancelFunc
	done   chan struct{}
}

func newGroup(t *testing.T, n int) *group {
	g := &group{t: t, ns: env.Namespace(t), holders: map[string]*atomic.Int32{}}
	for i := range n {
		k := fmt.Sprintf("ns-%d/app-%d", i%7, i)
		g.keys = append(g.keys, k)
		g.holders[k] = &atomic.Int32{}
	}
	return g
}

// start runs a replica until stop or the test's end: the Member, and four
// workers that try every key in turn and hold each they get for a moment.
func (g *group) start(name string) *replica {
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		g.t.Fatal(err)
	}
	r := &replica{done: make(chan struct{})}
	opts := DefaultOptions()
	opts.Leases = cut{cs.CoordinationV1(), &r.off}
	opts.Namespace, opts.Identity = g.ns, name
	opts.LeaseDuration, opts.RenewDeadline, opts.RenewPeriod = 6*time.Second, 4*time.Second, 500*time.Millisecond
	opts.Keys = func() []string { return g.keys }
	opts.Changed = func([]string) {}
	opts.Log = testr.New(g.t)
	if r.m, err = New(opts); err != nil {
		g.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	var wg sync.WaitGroup
	wg.Add(5)
	go func() { defer wg.Done(); _ = r.m.Start(ctx) }()
	for range 4 {
		go func() { defer wg.Done(); g.work(ctx, r.m) }()
	}
	go func() { wg.Wait(); close(r.done) }()
	g.t.Cleanup(r.stop)
	return r
}

func (r *replica) stop() {
	r.cancel()
	<-r.done
}

func (g *group) work(ctx context.Context, m *Member) {
	for ctx.Err() == nil {
		for _, i := range rand.Perm(len(g.keys)) {
			key := g.keys[i]
			runCtx, release, ok := m.Acquire(ctx, key)
			if !ok {
				continue
			}
			g.runs.Add(1)
			if g.holders[key].Add(1) > 1 {
				g.double.Add(1)
				g.t.Errorf("%s runs on two replicas at once", key)
			}
			select { // a reconcile's work, cut short when the key is taken away
			case <-runCtx.Done():
			case <-time.After(time.Duration(rand.IntN(3)) * time.Millisecond):
			}
			g.holders[key].Add(-1)
			release()
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitCovered waits until the replicas in rs see exactly themselves as
// members and run every key: each key may run on exactly one of them.
func (g *group) waitCovered(what string, rs ...*replica) {
	g.t.Helper()
	var names []string
	for _, r := range rs {
		names = append(names, r.m.Name())
	}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		for _, r := range rs {
			r.m.mu.Lock()
			v := r.m.view
			r.m.mu.Unlock()
			if v == nil || !sameMembers(v.next, names) {
				return false, nil
			}
		}
		for _, k := range g.keys {
			n := 0
			for _, r := range rs {
				r.m.mu.Lock()
				if r.m.view.mayRun(k) {
					n++
				}
				r.m.mu.Unlock()
			}
			if n != 1 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		g.t.Fatalf("%s: the replicas never shared every key: %v", what, err)
	}
	for _, r := range rs {
		g.t.Logf("%s: %s runs %d keys", what, r.m.Name(), r.m.ownedCount())
	}
}

func (m *Member) ownedCount() int {
	m.setMu.Lock()
	defer m.setMu.Unlock()
	return len(m.running)
}

// TestMembersNeverRunAKeyTwice runs replicas through joins, a partition
// (the cut-off replica keeps trying to run its keys), its healing, and a
// graceful leave, while every replica tries every key all the time: no key
// ever runs on two replicas at once, and after each change the live
// replicas cover every key again.
//
// Checked: with the renewal deadline ignored (Acquire not checking
// validUntil and revoke a no-op), the cut-off replica keeps running its
// keys after the others took them over and the test fails.
func TestMembersNeverRunAKeyTwice(t *testing.T) {
	g := newGroup(t, 300)
	a, b := g.start("agent-a"), g.start("agent-b")
	g.waitCovered("two replicas", a, b)
	c := g.start("agent-c")
	g.waitCovered("c joined", a, b, c)

	c.off.Store(true)
	g.waitCovered("c cut off", a, b)
	c.off.Store(false)
	g.waitCovered("c back", a, b, c)

	b.stop()
	g.waitCovered("b left", a, c)
	d := g.start("agent-d")
	g.waitCovered("d joined", a, c, d)

	if g.double.Load() != 0 {
		t.Fatalf("%d of %d runs overlapped another replica's run of the same key", g.double.Load(), g.runs.Load())
	}
	t.Logf("%d runs, none overlapping", g.runs.Load())
	leases, err := kubernetes.NewForConfigOrDie(env.Config).CoordinationV1().Leases(g.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(leases.Items) != 3 {
		t.Errorf("%d Leases after b left, want 3 (a, c, d): b deletes its own on a graceful stop", len(leases.Items))
	}
}
