package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// pprofDir, when set, builds the agent with bench/testdata/agent_pprof.go
// added through `go build -overlay` (pprof on a loopback port; the work tree
// is not changed) and saves a CPU profile of the convergence and a heap
// profile after it there. Figures of such a run are not the ones to quote.
var pprofDir = os.Getenv("GITSYNC_BENCH_PPROF_DIR")

// buildAgent builds cmd/gitsync into dir and returns the binary's path.
func buildAgent(b *testing.B, dir string) string {
	b.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "gitsync")
	// As `make build` builds it: static, without symbol tables. A cgo
	// build is a different program for memory: kustomize imports package
	// plugin, which makes a cgo binary export every symbol (~15 MB of
	// dynamic symbol tables mapped into the process).
	args := []string{"build", "-trimpath", "-ldflags", "-s -w", "-o", bin}
	if pprofDir != "" {
		overlay, err := json.Marshal(map[string]map[string]string{"Replace": {
			filepath.Join(root, "cmd", "gitsync", "zz_bench_pprof.go"): filepath.Join(root, "bench", "testdata", "agent_pprof.go"),
		}})
		if err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(dir, "overlay.json")
		if err := os.WriteFile(path, overlay, 0o600); err != nil {
			b.Fatal(err)
		}
		args = append(args, "-overlay", path)
	}
	cmd := exec.Command("go", append(args, "./cmd/gitsync")...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build ./cmd/gitsync: %v\n%s", err, out)
	}
	return bin
}

// scaleAgent is a `gitsync run` child process.
type scaleAgent struct {
	cmd                   *exec.Cmd
	logPath               string
	metrics, health, prof string
	done                  chan struct{}
	started               time.Time // when the process was started
}

func freeLoopback(b *testing.B) string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startAgent starts bin as the agent of the whole cluster and waits until it
// is ready (CRD installed, caches synced). It is stopped when b ends. extra
// arguments come last, so they override the defaults (e.g. --webhook-addr).
func startAgent(b *testing.B, bin, kubeconfig string, concurrent int, extra ...string) *scaleAgent {
	b.Helper()
	a := launchAgent(b, bin, kubeconfig, concurrent, extra...)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if code, _ := get("http://" + a.health + "/readyz"); code == http.StatusOK {
			return a
		}
		select {
		case <-a.done:
			b.Fatalf("gitsync run exited before it was ready:\n%s", a.logTail(40))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Fatalf("gitsync run not ready after 2m:\n%s", a.logTail(40))
		}
	}
}

// launchAgent starts `gitsync run` and returns at once; a.started is when.
func launchAgent(b *testing.B, bin, kubeconfig string, concurrent int, extra ...string) *scaleAgent {
	b.Helper()
	dir := b.TempDir()
	a := &scaleAgent{logPath: filepath.Join(dir, "agent.log"), metrics: freeLoopback(b), health: freeLoopback(b), done: make(chan struct{})}
	logFile, err := os.Create(a.logPath)
	if err != nil {
		b.Fatal(err)
	}
	a.cmd = exec.Command(bin, "run", "--kubeconfig", kubeconfig, "--install-crds", "--leader-elect=false",
		"--metrics-addr", a.metrics, "--health-addr", a.health, "--webhook-addr", "",
		"--concurrent", strconv.Itoa(concurrent), "--cache-dir", filepath.Join(dir, "cache"), "--log-format", "json",
		"--allow-local-sources") // the benchmark's repositories are file:// URLs
	a.cmd.Args = append(a.cmd.Args, extra...)
	a.cmd.Stdout, a.cmd.Stderr = logFile, logFile
	if pprofDir != "" {
		a.prof = freeLoopback(b)
		a.cmd.Env = append(os.Environ(), "GITSYNC_PPROF_ADDR="+a.prof)
	}
	a.started = time.Now()
	if err := a.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() { _ = a.cmd.Wait(); _ = logFile.Close(); close(a.done) }()
	b.Cleanup(a.stop)
	return a
}

// stop sends SIGTERM and kills the agent if it has not ended after 30s.
func (a *scaleAgent) stop() {
	select {
	case <-a.done:
		return
	default:
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.done
	}
}

func (a *scaleAgent) logTail(n int) string {
	data, _ := os.ReadFile(a.logPath)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// logErrors counts the agent's log lines at error level.
func (a *scaleAgent) logErrors() (int, string) {
	data, _ := os.ReadFile(a.logPath)
	n, first := 0, ""
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.Contains(line, `"level":"error"`) {
			if n == 0 {
				first = line
			}
			n++
		}
	}
	return n, first
}

// procMem reads VmRSS and VmHWM (peak RSS) of pid, in MiB.
func procMem(pid int) (rss, hwm float64, err error) {
	m, err := procStatus(pid)
	return m["VmRSS:"], m["VmHWM:"], err
}

// procStatus reads the memory lines of /proc/pid/status (VmRSS:, VmHWM:,
// RssAnon:, RssFile:, ...), in MiB.
func procStatus(pid int) (map[string]float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[2] == "kB" {
			kb, _ := strconv.ParseFloat(fields[1], 64)
			out[fields[0]] = kb / 1024
		}
	}
	return out, sc.Err()
}

// procCPU is the user+system CPU time pid has used.
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15 of the whole line, in clock ticks (USER_HZ = 100).
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// controlPlanePIDs finds the etcd and kube-apiserver this test process
// started (testenv runs them as children).
func controlPlanePIDs() map[string]int {
	out := map[string]int{}
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(data)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		comm, rest := s[open+1:end], strings.Fields(s[end+2:])
		if len(rest) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(rest[1]); ppid == self && (comm == "etcd" || comm == "kube-apiserver") {
			out[comm] = pid
		}
	}
	return out
}

// promSample is the agent's /metrics reduced to what the benchmark reads.
type promSample struct {
	// requests counts rest_client_requests_total by method.
	requests map[string]float64
	// kinds counts gitsync_api_requests_total by kind (watch, lease, read,
	// write).
	kinds map[string]float64
	// reconciles counts gitsync_reconcile_duration_seconds_count by result.
	reconciles map[string]float64
	heapInuse  float64
}

func (p promSample) total(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}

func scrapeAgent(addr string) (promSample, error) {
	code, body := get("http://" + addr + "/metrics")
	if code != http.StatusOK {
		return promSample{}, fmt.Errorf("/metrics answered %d: %.200s", code, body)
	}
	p := promSample{requests: map[string]float64{}, kinds: map[string]float64{}, reconciles: map[string]float64{}}
	for line := range strings.SplitSeq(body, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		name, labels := line[:sp], ""
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name, labels = name[:i], name[i:]
		}
		switch name {
		case "rest_client_requests_total":
			p.requests[label(labels, "method")] += v
		case "gitsync_api_requests_total":
			p.kinds[label(labels, "kind")] += v
		case "gitsync_reconcile_duration_seconds_count":
			p.reconciles[label(labels, "result")] += v
		case "go_memstats_heap_inuse_bytes":
			p.heapInuse = v
		}
	}
	return p, nil
}

// label returns the value of name in a Prometheus label set `{a="x",b="y"}`.
func label(set, name string) string {
	_, after, ok := strings.Cut(set, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, `"`)
	return v
}

func diffCounts(later, earlier map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range later {
		if d := v - earlier[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = io.Copy(&buf, resp.Body)
	return resp.StatusCode, buf.String()
}

// saveProfileWhenUp is saveProfile as soon as the agent's pprof endpoint
// answers (a process just started), trying for 10s.
func (a *scaleAgent) saveProfileWhenUp(b *testing.B, path, name string) {
	if a.prof == "" {
		return
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if c, err := net.Dial("tcp", a.prof); err == nil {
			c.Close()
			break
		}
	}
	a.saveProfile(b, path, name)
}

// saveProfile fetches a pprof endpoint of the agent into pprofDir/name.
func (a *scaleAgent) saveProfile(b *testing.B, path, name string) {
	if a.prof == "" {
		return
	}
	saveFrom(b, http.DefaultClient, "http://"+a.prof+path, name)
}

// saveAPIServerProfile saves a CPU profile of the test control plane's
// kube-apiserver (its /debug/pprof, open to the administrator env.Config
// is) into pprofDir/name, taken over the next d.
func saveAPIServerProfile(b *testing.B, d time.Duration, name string) {
	if pprofDir == "" {
		return
	}
	rt, err := rest.TransportFor(env.Config)
	if err != nil {
		b.Logf("pprof %s: %v", name, err)
		return
	}
	url := strings.TrimSuffix(env.Config.Host, "/") + fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds()))
	saveFrom(b, &http.Client{Transport: rt}, url, name)
}

// saveFrom saves the body of a GET of url into pprofDir/name; a failure is
// logged, not fatal (a profile is an aid, not a figure).
func saveFrom(b *testing.B, c *http.Client, url, name string) {
	resp, err := c.Get(url)
	if err != nil {
		b.Logf("pprof %s: %v", name, err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Logf("pprof %s: %s", name, resp.Status)
		return
	}
	f, err := os.Create(filepath.Join(pprofDir, name))
	if err != nil {
		b.Logf("pprof %s: %v", name, err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		b.Logf("pprof %s: %v", name, err)
	}
}
