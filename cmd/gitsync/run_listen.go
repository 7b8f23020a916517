package main

import (
	"net"
	"strconv"

	"github.com/spf13/pflag"
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

// listenerOff reports whether addr turns a listener off: "0", the same for
// every listener flag (an empty value too).
func listenerOff(addr string) bool {
	return addr == "0" || addr == ""
}

// listenInCluster moves the listeners whose flag was not given to every
// interface, where the kubelet's probes and the Services reach them.
func (o *RunOptions) listenInCluster(fs *pflag.FlagSet) {
	for _, l := range []struct {
		flag string
		addr *string
		port int
	}{
		{"metrics-addr", &o.MetricsAddr, metricsPort},
		{"health-addr", &o.HealthAddr, healthPort},
		{"webhook-addr", &o.WebhookAddr, webhookPort},
	} {
		if !fs.Changed(l.flag) {
			*l.addr = defaultListen(l.port, true)
		}
	}
}

// bindOrOff is addr for controller-runtime's metrics server, which knows
// only "0" as off.
func bindOrOff(addr string) string {
	if listenerOff(addr) {
		return "0"
	}
	return addr
}
