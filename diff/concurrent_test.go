package diff_test

import (
	"context"
	"testing"

	"golang.org/x/sync/errgroup"

	"gitsync.dev/gitsync/diff"
)

// TestDiffConcurrentUse shares one Differ (and its memo) among goroutines
// deciding objects both locally and by dry-run; run with -race.
func TestDiffConcurrentUse(t *testing.T) {
	ns := env.Namespace(t)
	d, _ := differ(t, diff.DefaultOptions())
	pod := decode(t, `
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: NS}
spec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: "0.25"}}}]}
`, ns)
	cm := decode(t, configMap, ns)
	livePod, liveCM := applyAs(t, pod, "gitsync"), applyAs(t, cm, "gitsync")

	var g errgroup.Group
	g.SetLimit(8)
	results := make([]diff.Result, 32)
	for i := range results {
		desired, live := pod, livePod
		if i%2 == 1 {
			desired, live = cm, liveCM
		}
		g.Go(func() error {
			res, err := d.Diff(context.Background(), desired, live)
			results[i] = res
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("Diff: %v", err)
	}
	for i, res := range results {
		if res.Verdict != diff.InSync {
			t.Errorf("result %d = %s, want in-sync", i, res.Verdict)
		}
	}
}
