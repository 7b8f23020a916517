package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"gitsync.dev/gitsync/controller"
	"gitsync.dev/gitsync/internal/shard"
)

// nameEnv, for tests, sets a replica's Lease name exactly (no random
// suffix), so the test knows each replica's share in advance.
const nameEnv = "GITSYNC_SHARD_NAME"

// shardsAuto is the --shards value that makes replicas share the GitSyncs.
const shardsAuto = "auto"

// traceEnv names a file every finished reconcile is appended to, with the
// replica that ran it: for tests proving no GitSync ran on two replicas at
// once. Unset in every real deployment.
const traceEnv = "GITSYNC_SHARD_TRACE"

// shardFlags checks --shards against --leader-elect: replicas that share
// the work are all active, so leader election is off unless asked for, and
// asking for both is an error.
func (o *RunOptions) shardFlags(fs *pflag.FlagSet) error {
	switch o.Shards {
	case "":
		return nil
	case shardsAuto:
	default:
		return withExitCode(exitError, fmt.Errorf("--shards %q: want %q or nothing", o.Shards, shardsAuto))
	}
	if fs.Changed("leader-elect") && o.LeaderElect {
		return withExitCode(exitError, fmt.Errorf("--shards %s and --leader-elect exclude each other: every replica is active and owns a share", shardsAuto))
	}
	o.LeaderElect = false
	return nil
}

// addShards makes rec share its GitSyncs with the other replicas of its
// group (same --shard selector and --watch-namespace), each holding a Lease.
func (o *RunOptions) addShards(mgr manager.Manager, rec *controller.GitSyncReconciler) error {
	if o.Shards != shardsAuto {
		return nil
	}
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	opts := shard.DefaultOptions()
	opts.Leases = cs.CoordinationV1()
	opts.Namespace = o.shardNamespace()
	opts.Group = o.shardGroup()
	opts.Identity = firstNonEmpty(os.Getenv("POD_NAME"), hostname())
	opts.Keys, opts.Changed = rec.ShardKeys, rec.Requeue
	opts.Registerer = ctrlmetrics.Registry
	opts.TracePath, opts.Name = os.Getenv(traceEnv), os.Getenv(nameEnv)
	opts.Log = ctrl.Log.WithName("shard")
	m, err := shard.New(opts)
	if err != nil {
		return err
	}
	sel, err := o.shardSelector()
	if err != nil {
		return err
	}
	rec.ShareWith(m)
	ctrl.Log.Info("sharing GitSyncs with the other replicas", "replica", m.Name(), "group", opts.Group, "namespace", opts.Namespace)
	return mgr.Add(afterLeader{Member: m, leases: opts.Leases.Leases(opts.Namespace), leader: leaderElectionID(sel), period: opts.RenewPeriod, log: opts.Log})
}

// afterLeader starts a replica's membership only once no --leader-elect
// replica of the same --shard leads: when a Deployment switches to
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
// the same --shard selector and --watch-namespace.
func (o *RunOptions) shardGroup() string {
	if o.Shard == "" && o.WatchNamespace == "" {
		return "gitsync"
	}
	sum := sha256.Sum256([]byte(o.Shard + "\x00" + o.WatchNamespace))
	return "gitsync-" + hex.EncodeToString(sum[:6])
}

// shardNamespace holds the Leases: --leader-election-namespace, else the
// pod's namespace, else the watched namespace, else default.
func (o *RunOptions) shardNamespace() string {
	if ns := firstNonEmpty(o.LeaderElectionNamespace, os.Getenv("POD_NAMESPACE")); ns != "" {
		return ns
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && inCluster() {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return firstNonEmpty(o.WatchNamespace, "default")
}

// shardSelector is --shard parsed; nil when every GitSync is this agent's.
func (o *RunOptions) shardSelector() (labels.Selector, error) {
	if o.Shard == "" {
		return nil, nil
	}
	sel, err := labels.Parse(o.Shard)
	if err != nil {
		return nil, withExitCode(exitError, fmt.Errorf("--shard %q: %w", o.Shard, err))
	}
	return sel, nil
}

// leaderElectionID names the Lease that --leader-elect replicas of one
// --shard selector (nil: all GitSyncs) elect their leader with.
func leaderElectionID(sel labels.Selector) string {
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
