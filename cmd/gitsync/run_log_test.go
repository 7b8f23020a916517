package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gitsync.dev/gitsync/agent"
)

// TestLoggerFormat: auto is JSON in a cluster or when stderr is not a
// terminal, console only for a person at a terminal outside a cluster; no
// error line carries a stack trace.
func TestLoggerFormat(t *testing.T) {
	for _, tc := range []struct {
		name                string
		format              string
		inCluster, terminal bool
		json                bool
	}{
		{"auto in a cluster with a tty", "auto", true, true, true},
		{"auto piped", "auto", false, false, true},
		{"auto at a terminal", "auto", false, true, false},
		{"json at a terminal", "json", false, true, true},
		{"console in a cluster", "console", true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log, err := buildLogger(&buf, tc.format, false, tc.inCluster, tc.terminal)
			if err != nil {
				t.Fatal(err)
			}
			log.Error(errors.New("boom"), "sync failed")
			out := buf.String()
			var line map[string]any
			if gotJSON := json.Unmarshal([]byte(out), &line) == nil; gotJSON != tc.json {
				t.Errorf("JSON = %v, want %v: %s", gotJSON, tc.json, out)
			}
			if strings.Contains(out, "stacktrace") || strings.Count(strings.TrimSpace(out), "\n") > 0 {
				t.Errorf("error line carries a stack trace: %s", out)
			}
		})
	}
	if _, err := buildLogger(&bytes.Buffer{}, "xml", false, false, false); err == nil {
		t.Errorf("--log-format xml accepted")
	}
}

// TestListenersLoopbackOnLaptop: unset, the listeners bind to loopback
// outside a cluster and to every interface in one; an address given is
// kept. (That "0" turns each of them off the same way is agent's
// TestListenerOff.)
func TestListenersLoopbackOnLaptop(t *testing.T) {
	cmd := newRunCmd(nil)
	fs := cmd.Flags()
	got := map[string]string{}
	for _, f := range []string{"metrics-addr", "health-addr", "webhook-addr"} {
		got[f] = fs.Lookup(f).DefValue
	}
	want := map[string]string{"metrics-addr": "127.0.0.1:8080", "health-addr": "127.0.0.1:8081", "webhook-addr": "127.0.0.1:9292"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("laptop defaults (-want +got):\n%s", diff)
	}

	o := &runOptions{agent: agent.Options{MetricsAddr: "127.0.0.1:8080", HealthAddr: "127.0.0.1:8081", WebhookAddr: "10.0.0.1:9000"}}
	if err := fs.Set("webhook-addr", "10.0.0.1:9000"); err != nil {
		t.Fatal(err)
	}
	o.listenInCluster(fs)
	got = map[string]string{"metrics-addr": o.agent.MetricsAddr, "health-addr": o.agent.HealthAddr, "webhook-addr": o.agent.WebhookAddr}
	want = map[string]string{"metrics-addr": ":8080", "health-addr": ":8081", "webhook-addr": "10.0.0.1:9000"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("in-cluster addresses (-want +got):\n%s", diff)
	}
}
