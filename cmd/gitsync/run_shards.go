package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
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
	rec.ShareWith(m)
	ctrl.Log.Info("sharing GitSyncs with the other replicas", "replica", m.Name(), "group", opts.Group, "namespace", opts.Namespace)
	return mgr.Add(m)
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

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "gitsync"
	}
	return h
}
