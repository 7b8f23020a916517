package main

import "testing"

// TestConnectSetsRequestBudget: the CLI does not inherit client-go's default
// of 5 requests per second (a 1,500-object apply took minutes with it), but
// keeps a budget a kubeconfig or caller sets explicitly.
func TestConnectSetsRequestBudget(t *testing.T) {
	tgt, err := (&targetOptions{Flags: targetFor(env.Kubeconfig, "default").Flags}).Connect()
	if err != nil {
		t.Fatal(err)
	}
	if tgt.Config.QPS != cliQPS || tgt.Config.Burst != cliBurst {
		t.Errorf("QPS/Burst = %v/%d, want %v/%d", tgt.Config.QPS, tgt.Config.Burst, float32(cliQPS), cliBurst)
	}
}
