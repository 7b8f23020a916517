package agent

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
)

// memoryLimitShare is the part of the container's memory limit the Go
// runtime is told it may use (GOMEMLIMIT). The rest is for what the Go heap
// limit does not count or cannot hold back at once: goroutine stacks, the
// runtime's own structures, memory not yet returned to the kernel, and the
// short-lived git processes of file:// and SSH fetches counted in the same
// cgroup.
const memoryLimitShare = 0.9

// cgroupV1Unlimited: cgroup v1 reports "no limit" as a page-rounded
// MaxInt64; anything this large is no limit.
const cgroupV1Unlimited = 1 << 62

// setMemoryLimit sets the Go runtime's soft memory limit to
// memoryLimitShare of the container's memory limit, read from the cgroup
// file system, unless GOMEMLIMIT is set (the operator's choice wins) or no
// limit applies. Without it the heap grows to twice the live data before a
// collection (GOGC=100), so an agent whose live heap is above half its
// container limit is killed by the kernel although a collection would have
// made room.
func setMemoryLimit(log logr.Logger, children int64) {
	soft, cgroupLimit, err := goMemoryLimit("/", os.LookupEnv)
	switch {
	case err != nil:
		log.Info("no memory limit set: cannot read the cgroup memory limit", "error", err.Error())
	case soft > 0:
		soft = agentShare(soft, cgroupLimit, children)
		debug.SetMemoryLimit(soft)
		log.Info("memory limit set from the cgroup", "cgroupLimitBytes", cgroupLimit, "goMemLimitBytes", soft, "renderChildrenBytes", children)
	}
}

// agentShare is the agent's own soft limit when render children, up to
// children bytes together, share its cgroup: what is left of soft, but
// never below a quarter of the cgroup's limit (an operator who gave the
// children more than the container has gets a warning from the kernel,
// not an agent that collects garbage all the time).
func agentShare(soft, cgroupLimit, children int64) int64 {
	return max(soft-children, cgroupLimit/4)
}

// goMemoryLimit returns the soft limit setMemoryLimit sets (0: leave the
// runtime as it is) and the cgroup limit it was derived from, reading the
// cgroup file system under root and the environment through lookupEnv.
func goMemoryLimit(root string, lookupEnv func(string) (string, bool)) (soft, cgroupLimit int64, err error) {
	if _, ok := lookupEnv("GOMEMLIMIT"); ok {
		return 0, 0, nil // the runtime read it already
	}
	limit, err := cgroupMemoryLimit(root)
	if err != nil || limit <= 0 {
		return 0, 0, err
	}
	return int64(float64(limit) * memoryLimitShare), limit, nil
}

// cgroupMemoryLimit returns the memory limit in bytes of the cgroup this
// process runs in, as seen under root (the file system root; tests pass a
// directory): the smallest limit of its cgroup and each parent cgroup
// visible to it, cgroup v2 (memory.max) if the process is in a v2 memory
// hierarchy, else v1 (memory.limit_in_bytes). It returns 0 when no limit
// applies, and an error only when the process's cgroup cannot be read.
func cgroupMemoryLimit(root string) (int64, error) {
	data, err := os.ReadFile(filepath.Join(root, "proc", "self", "cgroup"))
	if err != nil {
		return 0, err
	}
	v1, v2, err := parseProcCgroup(data)
	if err != nil {
		return 0, err
	}
	// A hybrid host lists both; the memory controller is in v1 then, and
	// the v2 hierarchy (mounted at unified/) has no memory.max.
	if v1 != "" {
		return smallestLimit(filepath.Join(root, "sys", "fs", "cgroup", "memory"), v1, "memory.limit_in_bytes")
	}
	if v2 != "" {
		return smallestLimit(filepath.Join(root, "sys", "fs", "cgroup"), v2, "memory.max")
	}
	return 0, nil
}

// parseProcCgroup reads /proc/self/cgroup: "0::/path" is the v2 cgroup,
// "N:...memory...:/path" the v1 memory cgroup.
func parseProcCgroup(data []byte) (v1, v2 string, err error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		id, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		controllers, p, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		if id == "0" && controllers == "" {
			v2 = p
			continue
		}
		for c := range strings.SplitSeq(controllers, ",") {
			if c == "memory" {
				v1 = p
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", "", fmt.Errorf("/proc/self/cgroup: %w", err)
	}
	return v1, v2, nil
}

// smallestLimit reads file in mount/cgroupPath and in each parent up to
// mount, and returns the smallest limit found (0: none). A container with
// its own cgroup namespace sees its cgroup as "/", the mount's root; one
// without sees the host path, whose directories may or may not be mounted
// in: missing ones are skipped.
func smallestLimit(mount, cgroupPath, file string) (int64, error) {
	var limit int64
	p := path.Clean("/" + cgroupPath)
	for {
		v, err := readLimit(filepath.Join(mount, filepath.FromSlash(p), file))
		if err != nil {
			return 0, err
		}
		if v > 0 && (limit == 0 || v < limit) {
			limit = v
		}
		if p == "/" {
			return limit, nil
		}
		p = path.Dir(p)
	}
}

// readLimit reads one limit file: a number of bytes, or "max" (v2) or a
// huge number (v1) for none. A missing file is no limit.
func readLimit(name string) (int64, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number of bytes", name, s)
	}
	if v >= cgroupV1Unlimited {
		return 0, nil
	}
	return v, nil
}
