//go:build !linux

package sandbox

import (
	"os"
	"syscall"
	"time"

	"gitsync.dev/gitsync/source/budget"
)

// executable is this process's own program. Outside Linux the child is
// still killed at the deadline and its output still counted, but its
// memory and CPU time are not limited: the agent runs on Linux.
var executable, _ = os.Executable()

func childAttr() *syscall.SysProcAttr { return nil }

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

func limitSelf(budget.Limits) error { return nil }

func smallThreadStacks() {}

func cpuUsed(ps *os.ProcessState) time.Duration { return ps.UserTime() + ps.SystemTime() }

func peakRSS(*os.ProcessState) int64 { return 0 }
