package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"gitsync.dev/gitsync/source/budget"
	sourcerender "gitsync.dev/gitsync/source/render"
	"gitsync.dev/gitsync/source/sandbox"
)

// renderLimitFlags are the render budget (source/budget, source/sandbox):
// the same flags on gitsync run and on the commands that render a source,
// so a chart that renders with `gitsync diff` renders in the agent.
type renderLimitFlags struct {
	Limits budget.Limits
	// Concurrency is how many render children run at once (gitsync run
	// only; a CLI command renders one source).
	Concurrency int
}

// AddFlags registers --render-timeout, --render-cpu, --render-memory and
// --render-output-bytes, and with concurrency --render-concurrency.
func (f *renderLimitFlags) AddFlags(fs *pflag.FlagSet, concurrency bool) {
	d := sandbox.DefaultOptions()
	f.Limits = d.Limits
	fs.DurationVar(&f.Limits.Wall, "render-timeout", d.Limits.Wall, "Deadline of one render of a kustomization or Helm chart, which runs in a child process; at it the child is killed, so it uses no CPU afterwards.")
	fs.DurationVar(&f.Limits.CPU, "render-cpu", d.Limits.CPU, "CPU time one render child may use (RLIMIT_CPU).")
	fs.Var(bytesFlag{&f.Limits.Memory}, "render-memory", "Memory one render child may grow by (RLIMIT_AS above what it starts with), e.g. 128Mi; a template that allocates more fails with a memory budget error.")
	fs.Var(bytesFlag{&f.Limits.OutputBytes}, "render-output-bytes", "Output one render may produce, counted while it is produced (decoded YAML, kustomize and Helm output), and what substitution and decryption may add to one sync, e.g. 16Mi.")
	if concurrency {
		f.Concurrency = d.Concurrency
		fs.IntVar(&f.Concurrency, "render-concurrency", d.Concurrency, "How many render children run at once, each up to --render-memory; one namespace holds at most half of them (at least one). Plain YAML renders in the agent.")
	}
}

// sandbox builds the renderer the flags describe.
func (f *renderLimitFlags) sandbox() (*sandbox.Sandbox, error) {
	return sandbox.New(sandbox.Options{Limits: f.Limits, Concurrency: max(f.Concurrency, 1)})
}

// render renders path of root in a sandbox with the flags' limits.
func (f *renderLimitFlags) render(ctx context.Context, root, path string, ropts sourcerender.Options) (*sourcerender.Rendered, error) {
	s, err := f.sandbox()
	if err != nil {
		return nil, err
	}
	return s.Render(ctx, root, path, ropts)
}

// bytesFlag is a byte count given as a Kubernetes quantity (128Mi, 1G,
// 4096).
type bytesFlag struct{ v *int64 }

func (b bytesFlag) String() string {
	if b.v == nil {
		return ""
	}
	return resource.NewQuantity(*b.v, resource.BinarySI).String()
}

func (b bytesFlag) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q is not a quantity of bytes (e.g. 128Mi): %w", s, err)
	}
	if q.Sign() <= 0 {
		return fmt.Errorf("%q: must be more than 0", s)
	}
	*b.v = q.Value()
	return nil
}

func (b bytesFlag) Type() string { return "bytes" }
