package budget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// Limits bound one render, or one sync's substitution and decryption.
type Limits struct {
	// OutputBytes caps the bytes the stages of one render produce together
	// (decoded documents, kustomize and Helm output, the render child's
	// stream), and separately those substitution and decryption add to one
	// sync. It bounds what the agent itself must hold.
	OutputBytes int64
	// Memory caps how much a render child's address space may grow
	// (RLIMIT_AS above what it has at start): what a template may allocate
	// before it produces a byte of output, such as
	// `repeat 400 (repeat 1048576 "x")`.
	Memory int64
	// CPU caps the CPU time of a render child (RLIMIT_CPU as the kernel's
	// backstop), so a template loop cannot spin longer than this however
	// the wall clock is shared.
	CPU time.Duration
	// Wall is the render's deadline: at it the child's process group is
	// killed, so a timed-out render uses no CPU afterwards.
	Wall time.Duration
}

// DefaultLimits fit the chart's 512 MiB agent with its default render
// concurrency (two children): 16 MiB of output, 128 MiB per child, 20 s of
// CPU and a 30 s deadline. A real chart renders in well under a second and
// a few MiB; the limits are there for the ones that were written to hurt.
func DefaultLimits() Limits {
	return Limits{OutputBytes: 16 << 20, Memory: 128 << 20, CPU: 20 * time.Second, Wall: 30 * time.Second}
}

// WithDefaults fills zero (or negative) fields from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.OutputBytes <= 0 {
		l.OutputBytes = d.OutputBytes
	}
	if l.Memory <= 0 {
		l.Memory = d.Memory
	}
	if l.CPU <= 0 {
		l.CPU = d.CPU
	}
	if l.Wall <= 0 {
		l.Wall = d.Wall
	}
	return l
}

// Budget counts the output of one render (or one sync's substitution and
// decryption) against Limits.OutputBytes.
type Budget struct {
	limits Limits
	used   atomic.Int64
}

// New starts a Budget; zero fields of l take DefaultLimits.
func New(l Limits) *Budget { return &Budget{limits: l.WithDefaults()} }

// Limits returns the limits b enforces, defaults filled.
func (b *Budget) Limits() Limits { return b.limits }

// Used returns the output bytes charged so far.
func (b *Budget) Used() int64 { return b.used.Load() }

// Charge counts n bytes that stage is about to produce. It refuses, and
// charges nothing, when they would take the total past OutputBytes, so a
// caller that charges before it allocates never holds more than the limit.
// A nil Budget charges nothing (a stage run outside any render).
func (b *Budget) Charge(stage Stage, n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	for {
		used := b.used.Load()
		if n > b.limits.OutputBytes-used {
			return &ExceededError{Stage: stage, Resource: Output, Limit: b.limits.OutputBytes}
		}
		if b.used.CompareAndSwap(used, used+n) {
			return nil
		}
	}
}

// Exceeded is the refusal for resource r of stage, with b's limit for it,
// for the enforcer of memory, CPU and wall time (package sandbox).
func (b *Budget) Exceeded(stage Stage, r Resource) *ExceededError {
	e := &ExceededError{Stage: stage, Resource: r}
	switch r {
	case Output:
		e.Limit = b.limits.OutputBytes
	case Memory:
		e.Limit = b.limits.Memory
	case CPU:
		e.Limit = int64(b.limits.CPU)
	case Wall:
		e.Limit = int64(b.limits.Wall)
	}
	return e
}

// Reader charges every byte read from r to stage, failing the read that
// would pass the limit (nothing of it is returned).
func (b *Budget) Reader(stage Stage, r io.Reader) io.Reader {
	return &countingReader{b: b, stage: stage, r: r}
}

type countingReader struct {
	b     *Budget
	stage Stage
	r     io.Reader
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if cerr := c.b.Charge(c.stage, int64(n)); cerr != nil {
		return 0, cerr
	}
	return n, err
}

// Writer charges every byte written to w to stage before writing it, so a
// writer over the limit writes nothing more.
func (b *Budget) Writer(stage Stage, w io.Writer) io.Writer {
	return &countingWriter{b: b, stage: stage, w: w}
}

type countingWriter struct {
	b     *Budget
	stage Stage
	w     io.Writer
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if err := c.b.Charge(c.stage, int64(len(p))); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// ownerKey carries who pays for a render in a context.
type ownerKey struct{}

// WithOwner records who a render started under ctx is for (the GitSync's
// namespace, the tenant): render slots are shared fairly between owners.
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// OwnerOf returns the owner WithOwner recorded, "" when none.
func OwnerOf(ctx context.Context) string {
	s, _ := ctx.Value(ownerKey{}).(string)
	return s
}

// ErrExceeded is matched by every *ExceededError with errors.Is.
var ErrExceeded = errors.New("render budget exceeded")

// formatLimit says a limit in the unit of its resource.
func formatLimit(r Resource, limit int64) string {
	switch r {
	case CPU, Wall:
		return time.Duration(limit).String()
	}
	if limit%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", limit>>20)
	}
	return fmt.Sprintf("%d bytes", limit)
}
