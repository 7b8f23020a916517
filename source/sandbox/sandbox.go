package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"gitsync.dev/gitsync/internal/fairshare"
	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/render"
)

// Options configures a Sandbox.
type Options struct {
	// Limits bound each render: its output bytes in both processes, and the
	// child's memory, CPU time and wall time.
	Limits budget.Limits
	// Concurrency is how many render children may run at once (each up to
	// Limits.Memory), shared fairly between owners; more renders wait.
	Concurrency int
	// Started, when set, is told each child's process ID once it runs, so
	// tests can watch the process itself.
	Started func(pid int)
	// Finished, when set, is told what each child cost once it is reaped
	// (benchmarks record it).
	Finished func(Stats)
	// Executable is the program started as the child; empty is this
	// process's own (the gitsync binary). Tests name a child built as the
	// agent is (sandboxtest.Child): a test binary may be built with the race
	// detector, whose shadow memory no address-space limit leaves room for.
	Executable string
}

// Stats are what one render child cost.
type Stats struct {
	PID int
	// Wall is from the start of the child to its reaping.
	Wall time.Duration
	// CPU is its user and system time.
	CPU time.Duration
	// PeakRSS is its largest resident set, in bytes (0 outside Linux).
	PeakRSS int64
}

// DefaultOptions are budget.DefaultLimits and two children at once: with
// 128 MiB each, the agent and its children fit the chart's 512 MiB.
func DefaultOptions() Options {
	return Options{Limits: budget.DefaultLimits(), Concurrency: 2}
}

// Sandbox renders paths, running those that need kustomize or Helm in
// child processes.
type Sandbox struct {
	opts  Options
	slots *fairshare.Limiter[struct{}]
}

// New validates opts, filling zero fields from DefaultOptions.
func New(opts Options) (*Sandbox, error) {
	if opts.Concurrency < 0 {
		return nil, fmt.Errorf("sandbox options invalid: concurrency %d", opts.Concurrency)
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = DefaultOptions().Concurrency
	}
	opts.Limits = opts.Limits.WithDefaults()
	return &Sandbox{opts: opts, slots: fairshare.New[struct{}](opts.Concurrency, 0, nil)}, nil
}

// RenderFS renders path of fsys, a Git tree in memory, in the caller's
// process with the budget Render gives plain paths (render.RenderFS): plain
// YAML only; render.ErrNeedsEngine tells the caller to check the path out
// and Render it.
func (s *Sandbox) RenderFS(ctx context.Context, fsys fs.FS, path string, ropts render.Options) (*render.Rendered, error) {
	ropts.Budget, ropts.PlainOnly = budget.New(s.opts.Limits), true
	return render.RenderFS(ctx, fsys, path, ropts)
}

// Render is render.Render of path under root with ropts (its Budget and
// PlainOnly are the sandbox's own), run where it can be stopped.
func (s *Sandbox) Render(ctx context.Context, root, path string, ropts render.Options) (*render.Rendered, error) {
	root, err := filepath.Abs(root) // the child starts elsewhere
	if err != nil {
		return nil, err
	}
	plain := ropts
	plain.Budget, plain.PlainOnly = budget.New(s.opts.Limits), true
	r, err := render.Render(ctx, root, path, plain)
	if !errors.Is(err, render.ErrNeedsEngine) {
		return r, err
	}
	release, err := s.slots.Acquire(ctx, budget.OwnerOf(ctx))
	if err != nil {
		return nil, err
	}
	defer release()
	ropts.Budget, ropts.PlainOnly = nil, false
	return s.inChild(ctx, request{Root: root, Path: path, Options: ropts}, path)
}
