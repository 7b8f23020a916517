package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/agent"
	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gitsynctest"
)

// TestShardsWaitForLeader: a --shards auto replica started while a
// --leader-elect replica still leads (a Deployment switching modes, as the
// chart's rolling update does) takes no share and reconciles nothing while
// the leader renews its Lease; it starts once the leader releases the Lease
// or, after a crash, once the Lease has gone unrenewed for its duration.
// TestShardsAfterLeaderStops does the same with a real leader stopping.
func TestShardsWaitForLeader(t *testing.T) {
	for _, tc := range []struct {
		name    string
		release bool
	}{
		{"leader releases", true},
		{"leader crashes", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			c := gitsyncClient(t)
			cs, err := kubernetes.NewForConfig(env.Config)
			if err != nil {
				t.Fatal(err)
			}
			leases := cs.CoordinationV1().Leases(ns)
			leader := startLeader(t, leases)

			dir := newRunRepo(t)
			commit := commitFiles(t, dir, map[string]string{"deploy/a.yaml": configMap("a", "value", "1")})
			a := startShardAgent(t, ns, "gitsync-shard-waiter", filepath.Join(t.TempDir(), "trace"))
			gs := gitsynctest.New(ns, "app", "file://"+dir, func(g *gitsyncv1.GitSync) {
				g.Spec.RetryInterval = &metav1.Duration{Duration: 2 * time.Second}
				g.Spec.Prune = false
			})
			poll(t, "create GitSync (CRD installed by the agent)", func(ctx context.Context) (bool, error) {
				return c.Create(ctx, gs.DeepCopy()) == nil, nil
			})

			// While the leader renews, the replica says it waits, and
			// holds no Lease and applies nothing, over three of its
			// renewal periods after saying so.
			tookNothing := func(ctx context.Context) error {
				list, err := leases.List(ctx, metav1.ListOptions{LabelSelector: gitsyncv1.LabelShardGroup})
				if err != nil {
					return nil
				}
				if len(list.Items) > 0 {
					return errors.New("the replica holds Lease " + list.Items[0].Name + " while the leader leads")
				}
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
					return errors.New("ConfigMap a was applied while the leader leads")
				}
				return nil
			}
			poll(t, "the replica says it waits for the leader", func(ctx context.Context) (bool, error) {
				return strings.Contains(a.log.String(), "waiting for it to stop"), tookNothing(ctx)
			})
			err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 6*time.Second, true, func(ctx context.Context) (bool, error) {
				return false, tookNothing(ctx)
			})
			if !wait.Interrupted(err) {
				t.Fatal(err)
			}

			lastRenewal := leader.stop(t, tc.release)
			stopped := time.Now()
			waitApplied(t, c, client.ObjectKeyFromObject(gs), commit)
			t.Logf("applied %s after the leader stopped renewing (released: %v)", time.Since(stopped).Round(100*time.Millisecond), tc.release)
			var cm corev1.ConfigMap
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "a"}, &cm); err != nil {
				t.Fatal(err)
			}
			// Creation times are whole seconds: compare at that grain.
			if expiry := lastRenewal.Add(leaderLeaseSeconds * time.Second).Truncate(time.Second); !tc.release && cm.CreationTimestamp.Time.Before(expiry) {
				t.Errorf("ConfigMap a created at %s, before the crashed leader's Lease ran out at %s", cm.CreationTimestamp.Time, expiry)
			}
		})
	}
}

// TestShardsAfterLeaderStops: a real `gitsync run --leader-elect` leads and
// has applied a GitSync; a --shards auto replica started beside it waits,
// reconciling nothing; once the leader is stopped (SIGTERM, as a rolling
// update does) the sharing replica applies the next commit.
func TestShardsAfterLeaderStops(t *testing.T) {
	ns := env.Namespace(t)
	c := gitsyncClient(t)
	ctx := context.Background()
	leader := startRun(t, ns, "--leader-elect", "--leader-election-namespace", ns)
	dir := newRunRepo(t)
	commit1 := commitFiles(t, dir, map[string]string{"deploy/a.yaml": configMap("a", "value", "1")})
	gs := gitsynctest.New(ns, "le", "file://"+dir)
	poll(t, "create GitSync", func(ctx context.Context) (bool, error) { return c.Create(ctx, gs.DeepCopy()) == nil, nil })
	key := client.ObjectKeyFromObject(gs)
	waitApplied(t, c, key, commit1)

	a := startShardAgent(t, ns, "gitsync-shard-next", filepath.Join(t.TempDir(), "trace"))
	poll(t, "the sharing replica says it waits for the leader", func(context.Context) (bool, error) {
		return strings.Contains(a.log.String(), "waiting for it to stop"), nil
	})
	// A reconcile asked for now goes to the leader alone.
	commit2 := commitFiles(t, dir, map[string]string{"deploy/a.yaml": configMap("a", "value", "2")})
	if err := agent.RequestReconcile(ctx, c, key); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, c, key, commit2)
	if _, text := httpGet("http://" + a.metrics + "/metrics"); strings.Contains(text, "gitsync_reconcile_duration_seconds_count") {
		t.Errorf("the sharing replica reconciled while the leader led")
	}

	leader.stop(t)
	stopped := time.Now()
	commit3 := commitFiles(t, dir, map[string]string{"deploy/a.yaml": configMap("a", "value", "3")})
	if err := agent.RequestReconcile(ctx, c, key); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, c, key, commit3)
	t.Logf("the sharing replica applied the next commit %s after the leader was stopped", time.Since(stopped).Round(100*time.Millisecond))
}

// leaderLeaseSeconds is the fake leader's lease duration: short, so the
// crash case is quick.
const leaderLeaseSeconds = 3

// fakeLeader holds the leader election Lease of `gitsync run --leader-elect`
// (no --shard) as a live leader does, renewing it every second.
type fakeLeader struct {
	leases interface {
		Get(context.Context, string, metav1.GetOptions) (*coordinationv1.Lease, error)
		Update(context.Context, *coordinationv1.Lease, metav1.UpdateOptions) (*coordinationv1.Lease, error)
	}
	quit, done chan struct{}
	renewed    time.Time
}

func startLeader(t *testing.T, leases interface {
	Create(context.Context, *coordinationv1.Lease, metav1.CreateOptions) (*coordinationv1.Lease, error)
	Get(context.Context, string, metav1.GetOptions) (*coordinationv1.Lease, error)
	Update(context.Context, *coordinationv1.Lease, metav1.UpdateOptions) (*coordinationv1.Lease, error)
}) *fakeLeader {
	t.Helper()
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: agent.LeaderElectionID(nil)},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("old-leader_0000"), LeaseDurationSeconds: ptr.To[int32](leaderLeaseSeconds),
			AcquireTime: &now, RenewTime: &now,
		},
	}
	if _, err := leases.Create(context.Background(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l := &fakeLeader{leases: leases, quit: make(chan struct{}), done: make(chan struct{}), renewed: now.Time}
	go l.renew()
	t.Cleanup(func() {
		select {
		case <-l.quit:
		default:
			close(l.quit)
		}
		<-l.done
	})
	return l
}

func (l *fakeLeader) renew() {
	defer close(l.done)
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-l.quit:
			return
		case <-ticker.C:
		}
		lease, err := l.leases.Get(context.Background(), agent.LeaderElectionID(nil), metav1.GetOptions{})
		if err != nil {
			continue
		}
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.RenewTime = &now
		if _, err := l.leases.Update(context.Background(), lease, metav1.UpdateOptions{}); err == nil {
			l.renewed = now.Time
		}
	}
}

// stop ends the renewals; with release the Lease is given up as
// controller-runtime's leader election does on a normal stop (no holder),
// else it is left as a crashed leader leaves it. It returns the last renewal.
func (l *fakeLeader) stop(t *testing.T, release bool) time.Time {
	t.Helper()
	close(l.quit)
	<-l.done
	if !release {
		return l.renewed
	}
	lease, err := l.leases.Get(context.Background(), agent.LeaderElectionID(nil), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lease.Spec.HolderIdentity = ptr.To("")
	if _, err := l.leases.Update(context.Background(), lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return l.renewed
}
