package main

import (
	"fmt"
	"net"
	"strconv"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
)

// Default ports of the agent's listeners. On a laptop they bind to
// loopback, so `gitsync run` does not offer its metrics, probes and webhook
// receiver to the network it happens to be on; in a cluster (and wherever
// an address is given, as the chart does) they bind where told.
const (
	metricsPort = 8080
	healthPort  = 8081
	webhookPort = 9292
)

// defaultListen is the default address of a listener on port: every
// interface in a cluster, loopback elsewhere.
func defaultListen(port int, inCluster bool) string {
	host := "127.0.0.1"
	if inCluster {
		host = ""
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// listenInCluster moves the listeners whose flag was not given to every
// interface, where the kubelet's probes and the Services reach them.
func (o *runOptions) listenInCluster(fs *pflag.FlagSet) {
	for _, l := range []struct {
		flag string
		addr *string
		port int
	}{
		{"metrics-addr", &o.agent.MetricsAddr, metricsPort},
		{"health-addr", &o.agent.HealthAddr, healthPort},
		{"webhook-addr", &o.agent.WebhookAddr, webhookPort},
	} {
		if !fs.Changed(l.flag) {
			*l.addr = defaultListen(l.port, true)
		}
	}
}

// shardsAuto is the --shards value that makes replicas share the GitSyncs.
const shardsAuto = "auto"

// shardFlags checks --shards against --leader-elect: replicas that share
// the work are all active, so leader election is off unless asked for, and
// asking for both is an error. It also checks --shard's selector.
func (o *runOptions) shardFlags(fs *pflag.FlagSet) error {
	if o.agent.Shard != "" {
		if _, err := labels.Parse(o.agent.Shard); err != nil {
			return withExitCode(exitError, fmt.Errorf("--shard %q: %w", o.agent.Shard, err))
		}
	}
	switch o.shards {
	case "":
		return nil
	case shardsAuto:
	default:
		return withExitCode(exitError, fmt.Errorf("--shards %q: want %q or nothing", o.shards, shardsAuto))
	}
	if fs.Changed("leader-elect") && o.agent.LeaderElection {
		return withExitCode(exitError, fmt.Errorf("--shards %s and --leader-elect exclude each other: every replica is active and owns a share", shardsAuto))
	}
	o.agent.LeaderElection, o.agent.ShareReplicas = false, true
	return nil
}
