package sandbox

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gitsync.dev/gitsync/source/budget"
)

// executable is this process's own program, which serves as the child.
// /proc/self/exe names the running binary even when its file was replaced
// or deleted since it started (a test binary rebuilt meanwhile).
const executable = "/proc/self/exe"

// childAttr puts the child in a process group of its own, so the parent
// kills whatever it started with one signal, and kills it with the parent.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the child's process group.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

// limitSelf sets the child's own limits. Memory is RLIMIT_AS at the
// address space the child has now plus l.Memory: a Go program's untouched
// reservations (arena hints, page summaries, ~1.3 GiB for the agent's
// binary) count there from the start, so only the growth is limited, and
// the heap grows by reserving address space (64 MiB arenas) before it
// touches it. RLIMIT_DATA does not work for Go: the runtime maps heap pages
// with MAP_FIXED over its own PROT_NONE reservations, which the kernel's
// data limit lets through, so a 400 MiB string was built under a 128 MiB
// RLIMIT_DATA, while its writable bookkeeping (~90 MiB of VmData untouched)
// counted. CPU is RLIMIT_CPU with the hard limit a second past the soft
// one: at the soft limit SIGXCPU ends the child with exitCPU, and the hard
// one is the kernel's SIGKILL should that not happen.
func limitSelf(l budget.Limits) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGXCPU)
	go func() {
		<-sig
		os.Exit(exitCPU)
	}()
	size, err := addressSpace()
	if err != nil {
		return err
	}
	as := size + uint64(l.Memory)
	if usesCgo() {
		as += cgoReserve
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as}); err != nil {
		return err
	}
	cpu := uint64((l.CPU + time.Second - 1) / time.Second)
	return syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: cpu, Max: cpu + 1})
}

// addressSpace is the size of the process's address space, in bytes
// (/proc/self/statm's first field, in pages).
func addressSpace() (uint64, error) {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	pages, _, _ := strings.Cut(string(data), " ")
	n, err := strconv.ParseUint(pages, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/self/statm: %w", err)
	}
	return n * uint64(os.Getpagesize()), nil
}

// cgoReserve is address space a render child linked with cgo (a laptop's
// go build) gets above its budget for what the C library reserves after
// the child's start (a malloc arena is a 64 MiB reservation): without it a
// small kustomize render met a 128 MiB budget 2 times in 20, and none did
// with it. The shipped binary has no cgo and gets none.
const cgoReserve = 64 << 20

// childStackBytes is the thread stack size of a render child built with
// cgo, where C's threads (and so the Go runtime's) get stacks of
// RLIMIT_STACK, 8 MiB by default, which RLIMIT_AS counts: ten threads
// would take 80 MiB of a 128 MiB budget without touching a page of it.
const childStackBytes = 1 << 20

// smallThreadStacks starts the child's program again with RLIMIT_STACK at
// childStackBytes when it links cgo (test binaries, a laptop's go build):
// the C library reads it once, at start. A binary without cgo, as shipped,
// allocates its thread stacks itself and is left alone. On failure the
// child goes on as it is.
func smallThreadStacks() {
	if !usesCgo() {
		return
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_STACK, &rl) != nil || rl.Cur <= childStackBytes {
		return // started again already, or small enough
	}
	rl.Cur = childStackBytes
	if syscall.Setrlimit(syscall.RLIMIT_STACK, &rl) != nil {
		return
	}
	_ = syscall.Exec(executable, os.Args, os.Environ())
}

// usesCgo reports whether the running binary was built with cgo.
func usesCgo() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "CGO_ENABLED" {
			return s.Value == "1"
		}
	}
	return false
}

// cpuUsed is the CPU time a finished child used.
func cpuUsed(ps *os.ProcessState) time.Duration { return ps.UserTime() + ps.SystemTime() }

// peakRSS is the largest resident set a finished child had, in bytes.
func peakRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10
	}
	return 0
}
