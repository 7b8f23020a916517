package main

import (
	"bytes"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// runProc is a `gitsync run` process started by a test.
type runProc struct {
	cmd  *exec.Cmd
	log  *syncBuf
	done chan struct{}
	err  error // the exit error, once done is closed

	metrics, health, webhook string // its listen addresses
}

// syncBuf is a bytes.Buffer safe for a process writing and a test reading.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// freeAddrs returns n distinct free loopback addresses: all are held open
// until every one is picked, so the kernel cannot hand the same port out
// twice (an agent's metrics and webhook listeners once got one port).
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		addrs[i] = l.Addr().String()
	}
	return addrs
}

// launchAgent starts bin with the arguments args gives for three free
// loopback addresses (metrics, health, webhook), and env added to this
// process's environment. It returns once the agent accepts connections on
// all three, or has exited.
//
// A port is free when picked and taken by the agent later: between the two
// any process on the machine may take it (an outgoing connection's local
// port is drawn from the same range), and the agent then exits with
// "address already in use". That start is retried on new addresses; CI once
// failed on it.
//
// A test that holds the agent before it listens (discovery lagging on
// purpose) passes wait false: it gets the process at once, without the
// retry.
func launchAgent(t *testing.T, args func(metrics, health, webhook string) []string, env []string, wait bool) *runProc {
	t.Helper()
	for attempt := 1; ; attempt++ {
		addrs := freeAddrs(t, 3)
		p := &runProc{log: &syncBuf{}, done: make(chan struct{}), metrics: addrs[0], health: addrs[1], webhook: addrs[2]}
		p.cmd = exec.Command(bin, args(p.metrics, p.health, p.webhook)...)
		p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
		p.cmd.Env = env
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.err = p.cmd.Wait(); close(p.done) }()
		if !wait || p.listening() || attempt == 5 || !strings.Contains(p.log.String(), "address already in use") {
			// listening, or exited for a reason of its own (a test's crash
			// point), or stuck: the test sees what happens next
			t.Cleanup(func() {
				p.stop(t)
				if t.Failed() {
					t.Logf("gitsync run log:\n%s", p.log.String())
				}
			})
			return p
		}
		t.Logf("gitsync run lost a picked port to another process, starting it again:\n%s", p.log.String())
	}
}

// listening waits until p accepts connections on each of its addresses
// (true), has exited or has not listened within two minutes (false).
func (p *runProc) listening() bool {
	pending := []string{p.metrics, p.health, p.webhook}
	deadline := time.After(2 * time.Minute)
	for len(pending) > 0 {
		if conn, err := net.DialTimeout("tcp", pending[0], time.Second); err == nil {
			_ = conn.Close()
			pending = pending[1:]
			continue
		}
		select {
		case <-p.done:
			return false
		case <-deadline:
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
	return true
}

// stop ends the process with SIGTERM (a graceful shutdown) if it runs.
func (p *runProc) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("gitsync run did not stop on SIGTERM within 30s")
	}
}
