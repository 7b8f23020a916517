package main

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestDebounce(t *testing.T) {
	const quiet = 300 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fc := clocktesting.NewFakeClock(time.Now())
	in := make(chan struct{}) // unbuffered: a send returns once debounce took the previous one
	out := make(chan struct{}, 1)
	go debounce(ctx, fc, quiet, in, out)

	// expectNone gives debounce a moment of real time to (wrongly) fire:
	// a negative check cannot wait for an event that must not come.
	expectNone := func(when string) {
		t.Helper()
		select {
		case <-out:
			t.Fatalf("%s: fired too early", when)
		case <-time.After(200 * time.Millisecond):
		}
	}
	expectOne := func(when string) {
		t.Helper()
		select {
		case <-out:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: did not fire", when)
		}
	}
	waitTimer := func() {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return fc.HasWaiters(), nil
		}); err != nil {
			t.Fatal("debounce started no timer")
		}
	}

	// One event fires once, after the quiet period.
	in <- struct{}{}
	waitTimer()
	fc.Step(quiet - time.Millisecond)
	expectNone("single event, before quiet")
	fc.Step(time.Millisecond)
	expectOne("single event, after quiet")

	// A burst restarts the quiet period with every event.
	in <- struct{}{}
	waitTimer()
	fc.Step(200 * time.Millisecond)
	in <- struct{}{}
	in <- struct{}{} // returns after the previous event re-armed the timer
	fc.Step(200 * time.Millisecond)
	expectNone("burst, 200ms after the last event")
	fc.Step(100 * time.Millisecond)
	expectOne("burst, quiet after the last event")
	expectNone("burst fires once")
}

// TestDiffWatch runs diff --watch: each save re-runs the diff, a broken
// manifest is reported without ending the watch, and Ctrl-C exits 0.
func TestDiffWatch(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.yaml": configMap("a", "k", "v")})
	wantCode(t, gitsyncIn(t, ns, "apply", dir), 0)

	var stdout, stderr syncBuf
	cmd := exec.Command(bin, "diff", "--watch", dir, "--kubeconfig", env.Kubeconfig, "-n", ns)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
	})
	waitOutput := func(what string, n int) {
		t.Helper()
		err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return strings.Count(stdout.String()+stderr.String(), what) >= n, nil
		})
		if err != nil {
			t.Fatalf("waiting for %q (x%d):\n--- stdout ---\n%s--- stderr ---\n%s", what, n, stdout.String(), stderr.String())
		}
	}

	waitOutput("In sync: 1 unchanged.", 1)
	waitOutput("watching for changes", 1)

	writeFiles(t, dir, map[string]string{"sub/new.yaml": configMap("new", "k", "v")})
	waitOutput("+ ConfigMap/"+ns+"/new (create)", 1)
	waitOutput("watching for changes", 2)

	writeFiles(t, dir, map[string]string{"broken.yaml": "kind: [\n"})
	waitOutput("broken.yaml", 1)
	waitOutput("# exit status 2", 1)

	writeFiles(t, dir, map[string]string{"broken.yaml": "", "sub/new.yaml": ""})
	waitOutput("In sync: 1 unchanged.", 2)

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("diff --watch after Ctrl-C: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("diff --watch did not stop on SIGINT")
	}
}
