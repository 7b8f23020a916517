package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"gitsync.dev/gitsync/internal/shard"
)

// The environment of a sharing replica, for tests: ShardNameEnv sets its
// Lease name exactly (no random suffix), so a test knows each replica's
// share in advance; ShardTraceEnv names a file every finished reconcile is
// appended to, with the replica that ran it, for tests proving no GitSync
// ran on two replicas at once. Unset in every real deployment.
const (
	ShardNameEnv  = "GITSYNC_SHARD_NAME"
	ShardTraceEnv = "GITSYNC_SHARD_TRACE"
)

// addShares makes the reconciler share its GitSyncs with the other
// replicas of its group (same Shard selector and Namespace), each holding
// a Lease.
func (a *Agent) addShares(o Options, log logr.Logger) error {
	if !o.ShareReplicas {
		return nil
	}
	cs, err := kubernetes.NewForConfig(a.mgr.GetConfig())
	if err != nil {
		return err
	}
	opts := shard.DefaultOptions()
	opts.Leases = cs.CoordinationV1()
	opts.Namespace = shardNamespace(o)
	opts.Group = shardGroup(o)
	opts.Identity = firstNonEmpty(os.Getenv("POD_NAME"), hostname())
	opts.Keys, opts.Changed = a.rec.ShardKeys, a.rec.Requeue
	opts.Registerer = o.registry()
	opts.TracePath, opts.Name = os.Getenv(ShardTraceEnv), os.Getenv(ShardNameEnv)
	opts.Log = logOf(o, "shard")
	m, err := shard.New(opts)
	if err != nil {
		return err
	}
	sel, err := shardSelector(o.Shard)
	if err != nil {
		return err
	}
	a.rec.ShareWith(m)
	log.Info("sharing GitSyncs with the other replicas", "replica", m.Name(), "group", opts.Group, "namespace", opts.Namespace)
	return a.mgr.Add(afterLeader{Member: m, leases: opts.Leases.Leases(opts.Namespace), leader: LeaderElectionID(sel), period: opts.RenewPeriod, log: opts.Log})
}

// afterLeader starts a replica's membership only once no leader-electing
// replica of the same Shard leads: when a Deployment switches to
// --shards auto (the chart's default since replicas share the work), its old
// leader keeps reconciling every GitSync until the rolling update stops it,
// and a sharing replica must not reconcile any of them meanwhile. Until
// then the replica holds no Lease, owns nothing and is Ready, so the rolling
// update can go on and stop the leader.
type afterLeader struct {
	*shard.Member
	leases coordclient.LeaseInterface
	leader string // the leader election Lease's name
	period time.Duration
	log    logr.Logger
}

func (a afterLeader) Start(ctx context.Context) error {
	if !a.waitLeader(ctx) {
		return nil
	}
	return a.Member.Start(ctx)
}

// waitLeader returns true once the leader Lease is absent, released (no
// holder: a leader stopped normally) or unchanged for its lease duration
// on this replica's clock (a leader that crashed, or stopped long ago: the
// rule leader election itself takes over by); false when ctx ends first.
func (a afterLeader) waitLeader(ctx context.Context) bool {
	var seenVersion string
	var seenAt time.Time
	waiting := false
	ticker := time.NewTicker(a.period)
	defer ticker.Stop()
	for {
		lease, err := a.leases.Get(ctx, a.leader, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return true
		case err != nil:
			a.log.Error(err, "read the leader election Lease; retrying", "lease", a.leader)
		case lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "":
			return true
		default:
			if lease.ResourceVersion != seenVersion {
				seenVersion, seenAt = lease.ResourceVersion, time.Now()
			}
			duration := 15 * time.Second
			if s := lease.Spec.LeaseDurationSeconds; s != nil && *s > 0 {
				duration = time.Duration(*s) * time.Second
			}
			if time.Since(seenAt) >= duration {
				a.log.Info("the leader election Lease ran out; taking a share", "lease", a.leader, "holder", *lease.Spec.HolderIdentity)
				return true
			}
			if !waiting {
				a.log.Info("a --leader-elect replica leads these GitSyncs; waiting for it to stop before taking a share", "lease", a.leader, "holder", *lease.Spec.HolderIdentity)
				waiting = true
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-ticker.C:
		}
	}
}

// shardGroup names the replicas that divide one set of GitSyncs: those with
// the same Shard selector and Namespace.
func shardGroup(o Options) string {
	if o.Shard == "" && o.Namespace == "" {
		return "gitsync"
	}
	sum := sha256.Sum256([]byte(o.Shard + "\x00" + o.Namespace))
	return "gitsync-" + hex.EncodeToString(sum[:6])
}

// shardNamespace holds the Leases: LeaderElectionNamespace, else the pod's
// namespace, else the watched namespace, else default.
func shardNamespace(o Options) string {
	if ns := firstNonEmpty(o.LeaderElectionNamespace, os.Getenv("POD_NAMESPACE")); ns != "" {
		return ns
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && InCluster() {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return firstNonEmpty(o.Namespace, "default")
}

// shardSelector is shard parsed; nil when every GitSync is this agent's.
func shardSelector(shard string) (labels.Selector, error) {
	if shard == "" {
		return nil, nil
	}
	sel, err := labels.Parse(shard)
	if err != nil {
		return nil, fmt.Errorf("agent options invalid: Shard %q: %w", shard, err)
	}
	return sel, nil
}

// LeaderElectionID names the Lease that leader-electing replicas of one
// Shard selector (nil: all GitSyncs) elect their leader with.
func LeaderElectionID(sel labels.Selector) string {
	if sel == nil {
		return "gitsync-leader"
	}
	sum := sha256.Sum256([]byte(sel.String()))
	return "gitsync-leader-" + hex.EncodeToString(sum[:6])
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "gitsync"
	}
	return h
}
