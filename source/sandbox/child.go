package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/render"
)

// childEnv marks a process started to serve one render; its value is the
// protocol's version, so a binary of another version refuses to serve.
const childEnv = "GITSYNC_RENDER_CHILD"

// childVersion is the version of request and frame.
const childVersion = "1"

// limitsEnv carries the child's budget.Limits (JSON), so it sets them
// before it reads a byte of the request.
const limitsEnv = "GITSYNC_RENDER_LIMITS"

// Exit codes of a child; anything else is the Go runtime's own (2 for a
// fatal error such as running out of memory) or a signal.
const (
	exitOK       = 0
	exitProtocol = 90 // the request could not be read, or the answer written
	exitCPU      = 91 // SIGXCPU: the soft CPU limit passed
)

func init() {
	if v, ok := os.LookupEnv(childEnv); ok {
		smallThreadStacks() // proc_linux.go: may start the program again
		os.Exit(serveChild(v, os.Getenv(limitsEnv), os.Stdin, os.Stdout, os.Stderr))
	}
}

// serveChild is the whole life of a render child: limits first, then the
// request, the render and the answer. It returns the exit code.
func serveChild(version, limitsJSON string, in io.Reader, out, errs io.Writer) int {
	if version != childVersion {
		fmt.Fprintf(errs, "render child: protocol %q, this binary speaks %q\n", version, childVersion)
		return exitProtocol
	}
	var lim budget.Limits
	if err := json.Unmarshal([]byte(limitsJSON), &lim); err != nil {
		fmt.Fprintf(errs, "render child: limits unreadable: %v\n", err)
		return exitProtocol
	}
	lim = lim.WithDefaults()
	if err := limitSelf(lim); err != nil { // proc_linux.go
		fmt.Fprintf(errs, "render child: limits not set: %v\n", err)
		return exitProtocol
	}
	// The heap's soft limit below RLIMIT_AS, so the collector works
	// before the kernel refuses (stacks and runtime data count there too).
	debug.SetMemoryLimit(lim.Memory / 4 * 3)
	req, err := decodeRequest(in)
	if err != nil {
		fmt.Fprintf(errs, "render child: request unreadable: %v\n", err)
		return exitProtocol
	}
	opts := req.Options
	opts.Budget = budget.New(lim)
	r, err := render.Render(context.Background(), req.Root, req.Path, opts)
	if err := writeAnswer(out, r, err); err != nil {
		fmt.Fprintf(errs, "render child: answer not written: %v\n", err)
		return exitProtocol
	}
	return exitOK
}
