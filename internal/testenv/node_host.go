package testenv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A real node changes the machine it runs on: kubelet sets kernel sysctls,
// kubelet and kube-proxy add KUBE-* iptables chains, the CNI bridge plugin adds
// a bridge, NAT rules and turns on forwarding, containerd and runc mount
// overlays and namespaces, and pods get kubepods cgroups. hostState records
// all of that before the node starts and puts it back after, and is written to
// disk first so a test binary killed before its cleanup ran (a go test
// timeout) is cleaned up by the next node start on the machine.

// nodeLockDir holds the machine-wide lock (one node at a time) and the saved
// host state of the node that holds it.
const nodeLockDir = "/var/tmp/gitsync-testenv-node"

// hostPaths are host locations the node's programs may create despite being
// pointed at the node's own directory (the shim socket root is fixed in
// containerd; kubelet links container logs under /var/log/containers). What
// is new in them afterwards is removed.
var hostPaths = []string{
	"/run/containerd", "/var/lib/kubelet", "/var/log/pods", "/var/log/containers",
	"/var/lib/cni", "/run/netns", "/etc/cni", "/opt/cni", "/opt/containerd",
	"/var/lib/containerd", "/etc/containerd", "/run/nri", "/etc/nri",
	"/var/lib/kube-proxy", "/run/kubernetes", "/etc/kubernetes", "/usr/libexec/kubernetes",
}

// sysctlDirs are the /proc/sys folders whose writable values are saved and
// put back (kubelet's kernel defaults, forwarding, route_localnet, conntrack).
var sysctlDirs = []string{"vm", "kernel", "net/ipv4", "net/ipv6/conf/all", "net/ipv6/conf/default", "net/bridge", "net/netfilter", "net/core"}

// hostState is what the node may change, as found before it started.
type hostState struct {
	Dir        string              `json:"dir"`        // the node's own directory
	Sysctls    map[string]string   `json:"sysctls"`    // /proc/sys path -> value
	Iptables   map[string]string   `json:"iptables"`   // "iptables"/"ip6tables" -> iptables-save output
	Paths      map[string][]string `json:"paths"`      // host path -> its entries; absent key: did not exist
	Mounts     []string            `json:"mounts"`     // mount points
	Links      []string            `json:"links"`      // network interface names
	CgroupDirs []string            `json:"cgroupDirs"` // kubepods directories that existed (normally none)
	// Leftovers are the folders of the rest of the control plane (testenv's
	// and etcd's); a process naming one in its command line is part of it.
	// Only a restore after a killed test binary stops them: normally the
	// Env stops them itself.
	Leftovers []string `json:"leftovers"`
}

// captureHostState reads everything restoreHost puts back.
func captureHostState(dir string) (*hostState, error) {
	s := &hostState{Dir: dir, Iptables: map[string]string{}, Paths: map[string][]string{}}
	var err error
	if s.Sysctls, err = readSysctls(); err != nil {
		return nil, err
	}
	// A value that changes between two reads (a counter, a random seed) is
	// not state anyone set; leave it alone.
	again, err := readSysctls()
	if err != nil {
		return nil, err
	}
	for k, v := range s.Sysctls {
		if again[k] != v {
			delete(s.Sysctls, k)
		}
	}
	for _, tool := range []string{"iptables", "ip6tables"} {
		out, err := exec.Command(tool + "-save").Output()
		if err != nil {
			return nil, fmt.Errorf("%s-save: %w", tool, err)
		}
		s.Iptables[tool] = string(out)
	}
	for _, p := range hostPaths {
		entries, err := os.ReadDir(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		names := []string{}
		for _, e := range entries {
			names = append(names, e.Name())
		}
		s.Paths[p] = names
	}
	if s.Mounts, err = mountPoints(); err != nil {
		return nil, err
	}
	if s.Links, err = linkNames(); err != nil {
		return nil, err
	}
	s.CgroupDirs = kubepodsCgroups()
	return s, nil
}

func readSysctls() (map[string]string, error) {
	out := map[string]string{}
	for _, d := range sysctlDirs {
		root := filepath.Join("/proc/sys", d)
		err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				if path == root && errors.Is(err, fs.ErrNotExist) {
					return filepath.SkipDir
				}
				return nil
			}
			if e.IsDir() {
				// Per-interface settings come and go with the interfaces.
				if d == "net/ipv4" && path != root && strings.HasPrefix(strings.TrimPrefix(path, root+"/"), "conf/") {
					base := filepath.Base(path)
					if base != "all" && base != "default" && base != "conf" {
						return filepath.SkipDir
					}
				}
				if d == "net/ipv4" && strings.HasSuffix(path, "/neigh") {
					return filepath.SkipDir
				}
				if d == "kernel" && (strings.HasSuffix(path, "/random") || strings.HasSuffix(path, "/usermodehelper")) {
					return filepath.SkipDir
				}
				return nil
			}
			info, err := e.Info()
			if err != nil || info.Mode().Perm()&0o200 == 0 || info.Mode().Perm()&0o444 == 0 {
				return nil
			}
			if strings.HasSuffix(path, "/ns_last_pid") || strings.HasSuffix(path, "/stat_refresh") {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return nil
			}
			out[path] = string(data)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 {
			out = append(out, unescapeMount(fields[4]))
		}
	}
	sort.Strings(out)
	return out, sc.Err()
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func linkNames() ([]string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, i := range ifs {
		out = append(out, i.Name)
	}
	sort.Strings(out)
	return out, nil
}

// cgroupMounts returns the mount points of every cgroup hierarchy.
func cgroupMounts() []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		left, right, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		fields, rfields := strings.Fields(left), strings.Fields(right)
		if len(fields) > 4 && len(rfields) > 0 && (rfields[0] == "cgroup" || rfields[0] == "cgroup2") {
			out = append(out, unescapeMount(fields[4]))
		}
	}
	return out
}

// kubepodsCgroups lists the kubepods cgroup directories of every hierarchy.
func kubepodsCgroups() []string {
	var out []string
	for _, m := range cgroupMounts() {
		p := filepath.Join(m, "kubepods")
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// saveHostState writes s beside the lock so a later start can restore it.
func saveHostState(s *hostState) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp := filepath.Join(nodeLockDir, "state.json.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(nodeLockDir, "state.json"))
}

func loadHostState() (*hostState, error) {
	data, err := os.ReadFile(filepath.Join(nodeLockDir, "state.json"))
	if err != nil {
		return nil, err
	}
	var s hostState
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("saved node host state: %w", err)
	}
	return &s, nil
}

// lockNode takes the machine-wide node lock, waiting up to wait for another
// test's node to finish. The lock is a flock: it is released when the
// process ends, however it ends.
func lockNode(wait time.Duration) (*os.File, error) {
	if err := os.MkdirAll(nodeLockDir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(nodeLockDir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another test node runs on this machine (lock %s): %w", f.Name(), err)
		}
		time.Sleep(500 * time.Millisecond) // polling a lock held by another process
	}
}

// restoreAfterCrash restores the machine after a node whose test binary
// died before its cleanup: the control plane it started goes too.
func restoreAfterCrash(s *hostState) error {
	for _, dir := range s.Leftovers {
		for _, pid := range processesWith(dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	err := restoreHost(s)
	for _, dir := range s.Leftovers {
		if left, _ := mountPoints(); !slices.ContainsFunc(left, func(m string) bool { return underAny(m, []string{dir}) }) {
			err = errors.Join(err, removeAllOrGone(dir))
		}
	}
	return err
}

// restoreHost stops whatever the node left running and puts the machine back
// as s recorded it. It goes on past failures and returns them all.
func restoreHost(s *hostState) error {
	var errs []error
	// Pods first: every process in a kubepods cgroup, then the shims of the
	// node's containerd (they are not in a pod cgroup and outlive containerd).
	errs = append(errs, killCgroupProcs(s.CgroupDirs))
	for _, pid := range processesWith(s.Dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	errs = append(errs, waitGone(func() bool { return len(processesWith(s.Dir)) == 0 }, "node processes"))
	errs = append(errs, removeCgroups(s.CgroupDirs))

	// Mounts the node made, deepest first, in its directory or the host paths.
	now, err := mountPoints()
	errs = append(errs, err)
	var added []string
	for _, m := range now {
		if slices.Contains(s.Mounts, m) {
			continue
		}
		if underAny(m, append([]string{s.Dir}, hostPaths...)) {
			added = append(added, m)
		}
	}
	sort.Slice(added, func(i, j int) bool { return len(added[i]) > len(added[j]) })
	for _, m := range added {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
		}
	}

	links, err := linkNames()
	errs = append(errs, err)
	for _, l := range links {
		if !slices.Contains(s.Links, l) {
			if out, err := exec.Command("ip", "link", "delete", l).CombinedOutput(); err != nil {
				// A veth goes with its peer's namespace; only report what stays.
				if _, statErr := net.InterfaceByName(l); statErr == nil {
					errs = append(errs, fmt.Errorf("ip link delete %s: %v: %s", l, err, out))
				}
			}
		}
	}

	for tool, saved := range s.Iptables {
		errs = append(errs, restoreIptables(tool, saved))
	}

	// Some writes reset others (ip_forward sets every interface's
	// forwarding), so go over them until nothing differs.
	for pass := 0; pass < 3; pass++ {
		now, err := readSysctls()
		if err != nil {
			errs = append(errs, err)
			break
		}
		var passErrs []error
		changed := false
		for k, v := range s.Sysctls {
			if cur, ok := now[k]; ok && cur != v {
				changed = true
				if err := os.WriteFile(k, []byte(v), 0o644); err != nil {
					passErrs = append(passErrs, fmt.Errorf("restore %s: %w", k, err))
				}
			}
		}
		if !changed || pass == 2 {
			errs = append(errs, passErrs...)
			break
		}
	}

	for _, p := range hostPaths {
		before, existed := s.Paths[p]
		if !existed {
			errs = append(errs, removeAllOrGone(p))
			continue
		}
		entries, _ := os.ReadDir(p)
		for _, e := range entries {
			if !slices.Contains(before, e.Name()) {
				errs = append(errs, removeAllOrGone(filepath.Join(p, e.Name())))
			}
		}
	}
	// Never walk into a mount left behind: removing through it would
	// delete what it shows.
	if left, _ := mountPoints(); !slices.ContainsFunc(left, func(m string) bool { return underAny(m, []string{s.Dir}) }) {
		errs = append(errs, removeAllOrGone(s.Dir))
	} else {
		errs = append(errs, fmt.Errorf("mounts left under %s; not removing it", s.Dir))
	}
	return errors.Join(errs...)
}

func underAny(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

func removeAllOrGone(p string) error {
	if err := os.RemoveAll(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return nil
}

// processesWith returns the pids whose command line mentions dir (the
// node's programs and containerd's shims, which are given its socket path).
func processesWith(dir string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		if bytes.Contains(raw, []byte(dir+"/")) || bytes.Contains(raw, []byte(dir+"\x00")) {
			out = append(out, pid)
		}
	}
	return out
}

// killCgroupProcs kills every process in a kubepods cgroup created since the
// node started (those in keep existed before), until all are gone.
func killCgroupProcs(keep []string) error {
	list := func() []int {
		var pids []int
		for _, root := range kubepodsCgroups() {
			if slices.Contains(keep, root) {
				continue
			}
			_ = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
				if err != nil || e.IsDir() || e.Name() != "cgroup.procs" {
					return nil
				}
				data, _ := os.ReadFile(path)
				for _, f := range strings.Fields(string(data)) {
					if pid, err := strconv.Atoi(f); err == nil {
						pids = append(pids, pid)
					}
				}
				return nil
			})
		}
		return pids
	}
	return waitGone(func() bool {
		pids := list()
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return len(pids) == 0
	}, "pod processes")
}

// removeCgroups removes the kubepods cgroup trees made since the node
// started, leaves first (a cgroup directory is removed with rmdir).
func removeCgroups(keep []string) error {
	var errs []error
	for _, root := range kubepodsCgroups() {
		if slices.Contains(keep, root) {
			continue
		}
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			err := waitGone(func() bool {
				err := syscall.Rmdir(d)
				return err == nil || errors.Is(err, fs.ErrNotExist)
			}, "cgroup "+d)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// waitGone polls done until it holds, for at most 30 seconds.
func waitGone(done func() bool, what string) error {
	deadline := time.Now().Add(30 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still there after 30s", what)
		}
		time.Sleep(100 * time.Millisecond) // polling the kernel for exits
	}
	return nil
}

// restoreIptables puts back the rules tool-save printed before the node
// started. iptables-restore replaces the tables the dump names; a table the
// node created from nothing is flushed and its chains deleted.
func restoreIptables(tool, saved string) error {
	var errs []error
	cmd := exec.Command(tool + "-restore")
	cmd.Stdin = strings.NewReader(saved)
	if out, err := cmd.CombinedOutput(); err != nil {
		errs = append(errs, fmt.Errorf("%s-restore: %v: %s", tool, err, out))
	}
	now, err := exec.Command(tool + "-save").Output()
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("%s-save: %w", tool, err))...)
	}
	before := iptablesTables(saved)
	for _, table := range iptablesTables(string(now)) {
		if slices.Contains(before, table) {
			continue
		}
		for _, args := range [][]string{{"-t", table, "-F"}, {"-t", table, "-X"}} {
			if out, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %v: %s", tool, strings.Join(args, " "), err, out))
			}
		}
	}
	return errors.Join(errs...)
}

func iptablesTables(dump string) []string {
	var out []string
	for _, line := range strings.Split(dump, "\n") {
		if strings.HasPrefix(line, "*") {
			out = append(out, strings.TrimPrefix(line, "*"))
		}
	}
	return out
}

// normalIptables is a dump without its comments, counters and empty tables
// (a table with only its built-in chains at policy ACCEPT and no rule), for
// comparing two dumps.
func normalIptables(dump string) string {
	var out, table []string
	empty := true
	flush := func() {
		if !empty {
			out = append(out, table...)
		}
		table, empty = nil, true
	}
	for _, line := range strings.Split(dump, "\n") {
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "*"):
			flush()
			table = append(table, line)
		case strings.HasPrefix(line, ":"):
			fields := strings.Fields(line)
			table = append(table, strings.Join(fields[:2], " "))
			if fields[1] != "ACCEPT" {
				empty = false
			}
		case line == "COMMIT":
			table = append(table, line)
		default:
			table = append(table, line)
			empty = false
		}
	}
	flush()
	return strings.Join(out, "\n")
}

// hostDiff describes how the machine differs from s, for the test that the
// node leaves nothing behind; empty when it does not.
func hostDiff(s *hostState) []string {
	now, err := captureHostState(s.Dir)
	if err != nil {
		return []string{err.Error()}
	}
	var diffs []string
	for k, v := range s.Sysctls {
		if n, ok := now.Sysctls[k]; ok && n != v {
			diffs = append(diffs, fmt.Sprintf("sysctl %s: %q, was %q", k, strings.TrimSpace(n), strings.TrimSpace(v)))
		}
	}
	for tool, v := range s.Iptables {
		if normalIptables(now.Iptables[tool]) != normalIptables(v) {
			diffs = append(diffs, fmt.Sprintf("%s rules differ:\n--- before\n%s\n--- after\n%s", tool, normalIptables(v), normalIptables(now.Iptables[tool])))
		}
	}
	for _, p := range hostPaths {
		b, bok := s.Paths[p]
		n, nok := now.Paths[p]
		if bok != nok || !slices.Equal(b, n) {
			diffs = append(diffs, fmt.Sprintf("path %s: entries %v (exists %v), was %v (exists %v)", p, n, nok, b, bok))
		}
	}
	// Only where the node mounts: other programs on the machine may mount
	// elsewhere meanwhile.
	roots := append([]string{s.Dir}, hostPaths...)
	mine := func(ms []string) []string {
		var out []string
		for _, m := range ms {
			if underAny(m, roots) {
				out = append(out, m)
			}
		}
		return out
	}
	if b, n := mine(s.Mounts), mine(now.Mounts); !slices.Equal(b, n) {
		diffs = append(diffs, fmt.Sprintf("mount points: %v, was %v", n, b))
	}
	if !slices.Equal(s.Links, now.Links) {
		diffs = append(diffs, fmt.Sprintf("network interfaces: %v, was %v", now.Links, s.Links))
	}
	if !slices.Equal(s.CgroupDirs, now.CgroupDirs) {
		diffs = append(diffs, fmt.Sprintf("kubepods cgroups: %v, was %v", now.CgroupDirs, s.CgroupDirs))
	}
	if _, err := os.Stat(s.Dir); err == nil {
		diffs = append(diffs, "node directory "+s.Dir+" still there")
	}
	if pids := processesWith(s.Dir); len(pids) > 0 {
		diffs = append(diffs, fmt.Sprintf("node processes still running: %v", pids))
	}
	return diffs
}
