package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/render"
)

// maxStderr is how much of a child's standard error is kept: enough for the
// Go runtime's fatal error line, which is all the parent reads in it.
const maxStderr = 4 << 10

// childResult is what one child did.
type childResult struct {
	rendered *render.Rendered
	// renderErr is the render's own failure, as the child reported it.
	renderErr error
	// readErr is a failure to read the answer: over the budget, or cut short.
	readErr error
}

// inChild runs req in a child process and returns its outcome; path names
// the render in errors.
func (s *Sandbox) inChild(ctx context.Context, req request, path string) (*render.Rendered, error) {
	in, err := req.encode()
	if err != nil {
		return nil, err
	}
	lim, err := json.Marshal(s.opts.Limits)
	if err != nil {
		return nil, err
	}
	b := budget.New(s.opts.Limits)
	deadline, cancel := context.WithTimeout(ctx, s.opts.Limits.Wall)
	defer cancel()
	var stderr headBuffer
	prog := s.opts.Executable
	if prog == "" {
		prog = executable
	}
	cmd := exec.Command(prog)
	cmd.Env = []string{childEnv + "=" + childVersion, limitsEnv + "=" + string(lim), "GOMAXPROCS=1", "GOTRACEBACK=none"}
	cmd.Stdin, cmd.Stderr, cmd.SysProcAttr = bytes.NewReader(in), &stderr, childAttr()
	cmd.Dir = os.TempDir()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("render child start failed: %w", err)
	}
	pid, start := cmd.Process.Pid, time.Now()
	if s.opts.Started != nil {
		s.opts.Started(pid)
	}
	done := make(chan childResult, 1)
	go func() {
		var res childResult
		res.rendered, res.renderErr, res.readErr = readAnswer(b.Reader(budget.StageRender, stdout))
		done <- res
	}()
	var res childResult
	select {
	case res = <-done:
		if res.readErr != nil {
			killGroup(pid) // over the budget: not a byte more
		}
	case <-deadline.Done():
		killGroup(pid)
		res = <-done // the pipe closes with the group
	}
	waitErr := cmd.Wait() // reaped: nothing of the render runs past here
	if s.opts.Finished != nil {
		s.opts.Finished(Stats{PID: pid, Wall: time.Since(start), CPU: cpuUsed(cmd.ProcessState), PeakRSS: peakRSS(cmd.ProcessState)})
	}
	return s.outcome(ctx, deadline, cmd.ProcessState, &stderr, res, waitErr, b, path)
}

// outcome turns what happened to a child into the render's result.
func (s *Sandbox) outcome(ctx, deadline context.Context, ps *os.ProcessState, stderr *headBuffer,
	res childResult, waitErr error, b *budget.Budget, path string) (*render.Rendered, error) {
	over := func(r budget.Resource) error {
		return &render.Error{Class: render.ErrOverBudget, Path: path, Detail: "render stopped", Err: b.Exceeded(budget.StageRender, r)}
	}
	var be *budget.ExceededError
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case deadline.Err() != nil && res.rendered == nil && res.renderErr == nil:
		return nil, over(budget.Wall)
	case errors.As(res.readErr, &be):
		return nil, over(budget.Output)
	case res.readErr == nil && waitErr == nil:
		return res.rendered, res.renderErr
	case outOfMemory(stderr.String()):
		return nil, over(budget.Memory)
	case ps.ExitCode() == exitCPU || overCPU(ps, b.Limits().CPU):
		return nil, over(budget.CPU)
	case killedBySignal(ps, syscall.SIGKILL):
		// Not us, not the CPU limit: the kernel's OOM killer, which picks
		// the largest process of the cgroup.
		return nil, over(budget.Memory)
	}
	return nil, fmt.Errorf("render child failed (%v): %s", ps, firstLine(stderr.String()))
}

// outOfMemory reports whether the Go runtime said it ran out of memory,
// or could not start a thread, which under RLIMIT_AS means the same: the
// thread's stack did not fit.
func outOfMemory(stderr string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "pthread_create failed", "failed to create new OS thread"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// overCPU reports whether a child killed by a signal had used its CPU time.
func overCPU(ps *os.ProcessState, limit time.Duration) bool {
	return (killedBySignal(ps, syscall.SIGKILL) || killedBySignal(ps, syscall.SIGXCPU)) && cpuUsed(ps) >= limit
}

func killedBySignal(ps *os.ProcessState, sig syscall.Signal) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// headBuffer keeps the first maxStderr bytes written to it.
type headBuffer struct{ bytes.Buffer }

func (t *headBuffer) Write(p []byte) (int, error) {
	if room := maxStderr - t.Len(); room > 0 {
		t.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
