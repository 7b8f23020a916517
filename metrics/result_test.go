package metrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"gitsync.dev/gitsync/metrics"
)

// TestReconcileHelpNamesEveryResult: the help text of
// gitsync_reconcile_duration_seconds names every result a reconcile can
// end with (it once left out "yielded").
func TestReconcileHelpNamesEveryResult(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range metrics.Results() {
		m.ObserveReconcile(r, 0)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "gitsync_reconcile_duration_seconds" {
			continue
		}
		for _, r := range metrics.Results() {
			if !strings.Contains(f.GetHelp(), string(r)) {
				t.Errorf("help %q does not name result %q", f.GetHelp(), r)
			}
		}
		if n := len(f.GetMetric()); n != len(metrics.Results()) {
			t.Errorf("%d series, want one per result (%d)", n, len(metrics.Results()))
		}
		return
	}
	t.Fatal("gitsync_reconcile_duration_seconds not registered")
}
