package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/render"
	"gitsync.dev/gitsync/source/sandbox"
	"gitsync.dev/gitsync/source/sandbox/sandboxtest"
)

func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// chart is a chart directory "name" with one template.
func chart(name, template string) map[string]string {
	return map[string]string{
		name + "/Chart.yaml":          "apiVersion: v2\nname: " + filepath.Base(name) + "\nversion: 0.1.0\n",
		name + "/templates/main.yaml": template,
	}
}

// The bombs of issue 24.
const (
	// repeatBomb allocates 400 MiB in one template call before a byte of
	// output exists.
	repeatBomb = `{{ repeat 400 (repeat 1048576 "x") }}`
	// rangeBomb spins for ever (10^10 iterations) and never outputs.
	rangeBomb = `{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}`
)

// spinMemory is the memory budget of the tests of the CPU and wall limits:
// rangeBomb allocates a 100,000-element list per outer step, and how far
// the child's address space grows before the collector catches up depends
// on the machine's speed, so the default 128 MiB could stop it first.
const spinMemory = 1 << 30

// pids records the children a Sandbox started.
type pids struct {
	mu   sync.Mutex
	list []int
	ch   chan int
}

func newPIDs() *pids { return &pids{ch: make(chan int, 16)} }

func (p *pids) started(pid int) {
	p.mu.Lock()
	p.list = append(p.list, pid)
	p.mu.Unlock()
	p.ch <- pid
}

func (p *pids) all() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.list...)
}

func newSandbox(t *testing.T, lim budget.Limits, concurrency int, p *pids) *sandbox.Sandbox {
	t.Helper()
	opts := sandbox.DefaultOptions()
	opts.Limits, opts.Concurrency = lim, concurrency
	opts.Executable = sandboxtest.Child(t)
	if p != nil {
		opts.Started = p.started
	}
	s, err := sandbox.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// requireGone fails unless pid no longer exists: reaped, not a zombie, not
// running.
func requireGone(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		state, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		t.Fatalf("render child %d still exists after the render returned (kill 0: %v; stat: %s)", pid, err, state)
	}
}

// requireOver fails unless err is the sandbox's refusal for resource r.
func requireOver(t *testing.T, err error, r budget.Resource) {
	t.Helper()
	var be *budget.ExceededError
	var re *render.Error
	if !errors.As(err, &re) || !errors.Is(err, render.ErrOverBudget) || !errors.As(err, &be) {
		t.Fatalf("error %v, want a *render.Error of class ErrOverBudget with a *budget.ExceededError", err)
	}
	if be.Resource != r {
		t.Fatalf("refused for %s (%v), want %s", be.Resource, err, r)
	}
}

// TestChildRendersAsRenderDoes: a chart and a kustomization render in a
// child to exactly what render.Render gives in-process (objects, number
// types, digest), Helm values keep their number types on the way, and a
// plain path starts no child at all.
func TestChildRendersAsRenderDoes(t *testing.T) {
	files := chart("charts/web", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n"+
		"  big: {{ .Values.big | quote }}\n  ratio: {{ .Values.ratio | quote }}\n  whole: {{ .Values.whole | quote }}\n"+
		"  replicas: \"{{ .Values.replicas }}\"\n  kinds: {{ kindOf .Values.big }}-{{ kindOf .Values.whole }}-{{ kindOf .Values.ratio }}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  priority: 3\n  x: 1.5\n")
	files["app/kustomization.yaml"] = "namePrefix: k-\nresources: [cm.yaml]\n"
	files["app/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  v: x\n"
	files["plain/cm.yaml"] = files["app/cm.yaml"]
	repo := writeRepo(t, files)
	h := helm.DefaultOptions()
	h.ReleaseName = "shop"
	h.Values = map[string]any{"big": int64(1000000), "ratio": 0.5, "whole": float64(3), "replicas": int64(2)}
	p := newPIDs()
	s := newSandbox(t, budget.Limits{}, 2, p)
	for _, path := range []string{"charts/web", "app", "plain"} {
		t.Run(path, func(t *testing.T) {
			opts := render.DefaultOptions()
			opts.Settings.Helm = &h
			want, err := render.Render(context.Background(), repo, path, opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Render(context.Background(), repo, path, opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("sandboxed render (-in-process +sandboxed):\n%s", diff)
			}
		})
	}
	if n := len(p.all()); n != 2 {
		t.Errorf("%d children started, want 2 (the chart and the kustomization; the plain path renders in-process)", n)
	}
}

// TestRepeatBomb: a template that allocates 400 MiB in one call is stopped
// by the child's memory limit, long before it could produce output, and
// reported as the memory budget; the child is gone.
//
// Checked by removing the RLIMIT_AS in proc_linux.go: the child then
// builds the 400 MiB string (what took the agent to 3.5 GiB) and spins on it
// until its CPU budget ends it.
func TestRepeatBomb(t *testing.T) {
	repo := writeRepo(t, chart("bomb", repeatBomb))
	p := newPIDs()
	s := newSandbox(t, budget.Limits{Memory: 128 << 20}, 1, p)
	_, err := s.Render(context.Background(), repo, "bomb", render.DefaultOptions())
	requireOver(t, err, budget.Memory)
	for _, pid := range p.all() {
		requireGone(t, pid)
	}
}

// TestRangeBombCPU: a template loop that never ends is stopped at its CPU
// budget by the kernel's RLIMIT_CPU, and reported so.
//
// Checked by removing the RLIMIT_CPU in proc_linux.go: the render then runs
// into its (here a minute later) deadline and is reported as that.
func TestRangeBombCPU(t *testing.T) {
	repo := writeRepo(t, chart("bomb", rangeBomb))
	p := newPIDs()
	s := newSandbox(t, budget.Limits{CPU: time.Second, Wall: time.Minute, Memory: spinMemory}, 1, p)
	_, err := s.Render(context.Background(), repo, "bomb", render.DefaultOptions())
	requireOver(t, err, budget.CPU)
	for _, pid := range p.all() {
		requireGone(t, pid)
	}
}

// TestDeadlineKillsTheChild: at the deadline the child is killed and
// reaped before Render returns, so a timed-out render uses no CPU
// afterwards (the process does not exist any more).
//
// Checked by returning at the deadline without killGroup and Wait in
// parent.go (what an in-process render does: the template goroutine runs
// on): the child then still exists here.
func TestDeadlineKillsTheChild(t *testing.T) {
	repo := writeRepo(t, chart("bomb", rangeBomb))
	p := newPIDs()
	s := newSandbox(t, budget.Limits{CPU: 10 * time.Minute, Wall: time.Second, Memory: spinMemory}, 1, p)
	_, err := s.Render(context.Background(), repo, "bomb", render.DefaultOptions())
	requireOver(t, err, budget.Wall)
	pids := p.all()
	if len(pids) != 1 {
		t.Fatalf("%d children started, want 1", len(pids))
	}
	requireGone(t, pids[0])
}

// TestCancelKillsTheChild: a caller that gives up (its context ends) gets
// its context's error, and the child is gone too.
func TestCancelKillsTheChild(t *testing.T) {
	repo := writeRepo(t, chart("bomb", rangeBomb))
	p := newPIDs()
	s := newSandbox(t, budget.Limits{CPU: 10 * time.Minute, Wall: 10 * time.Minute}, 1, p)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-p.ch // the child runs
		cancel()
	}()
	_, err := s.Render(ctx, repo, "bomb", render.DefaultOptions())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	requireGone(t, p.all()[0])
}

// TestOutputCountedAsRead: the parent counts the child's answer as it
// reads it and stops the child at the first byte over the budget. The
// chart's YAML fits the budget (Helm's own count passes) but its JSON does
// not, so only the parent's count can refuse it.
//
// Checked by reading the answer without budget.Reader in parent.go: the
// render then succeeds.
func TestOutputCountedAsRead(t *testing.T) {
	// A flow sequence of plain scalars: "a, " is 3 bytes of YAML and
	// `"a",` 4 of JSON.
	doc := "apiVersion: example.com/v1\nkind: Thing\nmetadata:\n  name: wide\nspec:\n  list: [" +
		strings.Repeat("a, ", 100_000) + "a]\n"
	repo := writeRepo(t, chart("wide", doc))
	limit := int64(len(doc)) + 1000 // the YAML fits, its JSON does not
	s := newSandbox(t, budget.Limits{OutputBytes: limit}, 1, nil)
	_, err := s.Render(context.Background(), repo, "wide", render.DefaultOptions())
	requireOver(t, err, budget.Output)
	var be *budget.ExceededError
	errors.As(err, &be)
	if be.Stage != budget.StageRender {
		t.Errorf("refused by %q, want the parent's count of the answer (%q)", be.Stage, budget.StageRender)
	}
}
