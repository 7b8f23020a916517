package testenv

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// process is one control-plane program started by testenv beyond what envtest
// starts itself (controller-manager, scheduler, kwok). Its output goes to a log
// file so a failure can show the tail.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	mu      sync.Mutex
	exitErr error
}

func startProcess(dir, binDir, name string, args ...string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	cmd := exec.Command(filepath.Join(binDir, name), args...)
	cmd.Dir = dir
	return run(cmd, name, logPath, logFile)
}

// run starts cmd with its output in logFile and follows it until it exits.
func run(cmd *exec.Cmd, name, logPath string, logFile *os.File) (*process, error) {
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("%s start: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the program has stopped, with its exit error.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.exitErr
	default:
		return false, nil
	}
}

// failure wraps err with the program's name and the tail of its log.
func (p *process) failure(err error) error {
	return fmt.Errorf("%s failed: %w\n--- last lines of %s ---\n%s", p.name, err, p.logPath, LogTail(p.logPath, 30))
}

func (p *process) stop() {
	if p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// waitHealthy polls the program's /healthz on its secure port until it answers
// 200, the program exits, or the timeout passes.
func (p *process) waitHealthy(ctx context.Context, port int, timeout time.Duration) error {
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, // self-signed serving cert of a local test process
	}
	url := "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz"
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if done, err := p.exited(); done {
			return false, fmt.Errorf("exited early: %v", err)
		}
		resp, err := client.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return p.failure(fmt.Errorf("not healthy on %s: %w", url, err))
	}
	return nil
}

// LogTail returns the last lines of the log file at path, for error messages
// about a program that failed (the demo reports its background programs so).
func LogTail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return tailBytes(data, lines)
}

func tailBytes(data []byte, lines int) string {
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// syncBuffer is a goroutine-safe buffer for envtest's process output.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Tail(lines int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return tailBytes(b.buf.Bytes(), lines)
}
