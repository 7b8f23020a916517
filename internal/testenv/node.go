package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// NodeName is the real Node that Options.Node runs.
const NodeName = "gitsync-e2e-node"

// PauseImage is the node's sandbox image, built from hack/tools/pause and
// imported at start; pods never pull it.
const PauseImage = "gitsync.test/pause:local"

// PodCIDR is where the node's bridge network gives pods their addresses.
const PodCIDR = "10.244.0.0/24"

// ErrNodeUnsupported says this machine or user cannot run a real node; the
// error wrapping it says what is missing. Tests skip on it (StartNode does).
var ErrNodeUnsupported = errors.New("cannot run a real node here")

// nodeNeeds are the host programs the node runs beside the cached binaries,
// with the Debian package providing each.
var nodeNeeds = []struct{ path, pkg string }{
	{"/usr/sbin/runc", "runc"},
	{"/usr/lib/cni/bridge", "containernetworking-plugins"},
	{"/usr/lib/cni/host-local", "containernetworking-plugins"},
	{"/usr/lib/cni/loopback", "containernetworking-plugins"},
	{"iptables", "iptables"},
	{"ip6tables", "iptables"},
	{"conntrack", "conntrack"},
	{"ip", "iproute2"},
	{"mount", "mount"},
}

// node is the kubelet, containerd and kube-proxy of a control plane started
// with Options.Node, and the host state they change.
type node struct {
	dir    string
	ip     string
	sock   string
	lock   *os.File
	saved  *hostState
	procs  []*process
	binDir string
}

// NodeIP is the host address the node, its pods and the apiserver use; a
// server a pod must reach (a test's Git server) listens there. Empty
// without Options.Node.
func (e *Env) NodeIP() string {
	if e.node == nil {
		return ""
	}
	return e.node.ip
}

// StartNode starts a control plane with a real node for one test, skips the
// test with the reason when this machine cannot run one, and stops it (and
// restores the machine) when the test ends, failed or not.
func StartNode(t testing.TB) *Env {
	t.Helper()
	e, err := Start(context.Background(), Options{Node: true, StartTimeout: 2 * time.Minute})
	if errors.Is(err, ErrNodeUnsupported) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatalf("start control plane with a node: %v", err)
	}
	saved := e.node.saved
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stop control plane with a node: %v", err)
		}
		// Every test with a node proves the machine is left as found.
		for _, d := range hostDiff(saved) {
			t.Errorf("the node left the machine changed: %s", d)
		}
	})
	return e
}

// nodePreflight says what this machine lacks to run a node, wrapping
// ErrNodeUnsupported.
func nodePreflight() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: kubelet, containerd and kube-proxy need root (running as uid %d)", ErrNodeUnsupported, os.Geteuid())
	}
	if len(cgroupMounts()) == 0 {
		return fmt.Errorf("%w: no cgroup hierarchy is mounted", ErrNodeUnsupported)
	}
	fsys, err := os.ReadFile("/proc/filesystems")
	if err != nil || !strings.Contains(string(fsys), "\toverlay\n") {
		return fmt.Errorf("%w: the kernel has no overlay filesystem (containerd's snapshotter needs it)", ErrNodeUnsupported)
	}
	var missing []string
	for _, n := range nodeNeeds {
		if _, err := exec.LookPath(n.path); err != nil {
			missing = append(missing, fmt.Sprintf("%s (apt-get install %s)", n.path, n.pkg))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing %s", ErrNodeUnsupported, strings.Join(missing, ", "))
	}
	return nil
}

// hostAddress returns the first global IPv4 address of an interface that is
// up: pods reach the apiserver and test servers there (loopback would be the
// pod's own).
func hostAddress() (string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
				return ipn.IP.String(), nil
			}
		}
	}
	return "", fmt.Errorf("%w: no interface with a global IPv4 address for pods to reach the host", ErrNodeUnsupported)
}

// configureNodeAPIServer makes the apiserver reachable from pods: it listens
// on the host address with a certificate for it and the `kubernetes`
// Service's ClusterIP, advertises that address as the Service's endpoint,
// reaches the kubelet by its InternalIP, and admits ServiceAccounts (envtest
// turns that plugin off) so pods get their tokens.
func (e *Env) configureNodeAPIServer(api *envtest.APIServer, certDir string) error {
	ip, err := hostAddress()
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return fmt.Errorf("apiserver port on %s: %w", ip, err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ca, err := servingCA(certDir, []net.IP{net.ParseIP(ip), net.ParseIP("10.0.0.1")})
	if err != nil {
		return fmt.Errorf("apiserver serving certificate: %w", err)
	}
	api.SecureServing.Address = ip
	api.SecureServing.Port = strconv.Itoa(port)
	api.SecureServing.CA = ca
	// Writes to ConfigMaps are audited, so a test can tell which replica
	// of an agent wrote what (sourceIPs is the pod's address).
	policy := filepath.Join(certDir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return err
	}
	args := api.Configure()
	args.Set("audit-policy-file", policy)
	args.Set("audit-log-path", filepath.Join(certDir, "audit.log"))
	args.Set("advertise-address", ip)
	args.Set("kubelet-preferred-address-types", "InternalIP,Hostname")
	args.Set("disable-admission-plugins", "")
	e.node = &node{ip: ip}
	return nil
}

// startNode starts the controllers, containerd, kubelet and kube-proxy and
// returns when the Node is Ready. The machine's state is saved first and
// restored by stopNode.
func (e *Env) startNode(ctx context.Context, opts Options) (err error) {
	n := e.node
	n.binDir = e.BinDir
	if n.lock, err = lockNode(10 * time.Minute); err != nil {
		return err
	}
	if old, err := loadHostState(); err == nil {
		// A node whose test binary died before its cleanup: restore first.
		fmt.Fprintf(os.Stderr, "testenv: restoring the machine after an earlier node in %s that was not stopped\n", old.Dir)
		if err := restoreAfterCrash(old); err != nil {
			return fmt.Errorf("restore the machine after an earlier node: %w", err)
		}
		_ = os.Remove(filepath.Join(nodeLockDir, "state.json"))
	}
	if n.dir, err = nodeDir(e.dir); err != nil {
		return err
	}
	if n.saved, err = captureHostState(n.dir); err != nil {
		return fmt.Errorf("record host state: %w", err)
	}
	n.saved.Leftovers = []string{e.dir}
	if etcd := e.env.ControlPlane.Etcd; etcd != nil && etcd.DataDir != "" {
		n.saved.Leftovers = append(n.saved.Leftovers, etcd.DataDir)
	}
	if err := saveHostState(n.saved); err != nil {
		return fmt.Errorf("save host state: %w", err)
	}
	n.sock = filepath.Join(n.dir, "containerd.sock")

	if err := e.startNodeControllers(ctx, opts); err != nil {
		return err
	}
	if err := n.startContainerd(ctx, opts.StartTimeout); err != nil {
		return err
	}
	pause := filepath.Join(n.dir, "pause.tar")
	if err := WriteProgramImage(pause, PauseImage, map[string]string{"pause": filepath.Join(e.BinDir, "pause")}, []string{"/pause"}); err != nil {
		return err
	}
	if err := e.ImportImage(ctx, pause); err != nil {
		return err
	}
	user, err := e.env.AddUser(envtest.User{Name: "system:node:" + NodeName, Groups: []string{"system:nodes", "system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("node credentials: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return err
	}
	nodeKubeconfig := filepath.Join(n.dir, "node.kubeconfig")
	if err := os.WriteFile(nodeKubeconfig, kc, 0o600); err != nil {
		return err
	}
	kubelet, err := n.startKubelet(nodeKubeconfig)
	if err != nil {
		return err
	}
	if err := n.startKubeProxy(nodeKubeconfig); err != nil {
		return err
	}
	return e.waitRealNodeReady(ctx, kubelet, opts.StartTimeout)
}

// startNodeControllers runs kube-controller-manager (which also publishes
// the cluster CA to every namespace as kube-root-ca.crt, which pods' token
// volumes need) and kube-scheduler.
func (e *Env) startNodeControllers(ctx context.Context, opts Options) error {
	common := []string{
		"--kubeconfig=" + e.Kubeconfig,
		"--authentication-kubeconfig=" + e.Kubeconfig,
		"--authorization-kubeconfig=" + e.Kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
	}
	certDir := e.env.ControlPlane.APIServer.CertDir
	kcmPort, err := freePort()
	if err != nil {
		return err
	}
	kcm, err := e.start("kube-controller-manager", append(common,
		"--secure-port="+strconv.Itoa(kcmPort),
		"--controllers=*",
		"--use-service-account-credentials=false",
		"--root-ca-file="+filepath.Join(certDir, "apiserver-ca.crt"),
		// Its FlexVolume prober would otherwise create and keep recreating
		// /usr/libexec/kubernetes while the node's cleanup removes it.
		"--flex-volume-plugin-dir="+filepath.Join(e.dir, "kcm-volume-plugins"),
	)...)
	if err != nil {
		return err
	}
	schedPort, err := freePort()
	if err != nil {
		return err
	}
	sched, err := e.start("kube-scheduler", append(common, "--secure-port="+strconv.Itoa(schedPort))...)
	if err != nil {
		return err
	}
	if err := kcm.waitHealthy(ctx, kcmPort, opts.StartTimeout); err != nil {
		return err
	}
	return sched.waitHealthy(ctx, schedPort, opts.StartTimeout)
}

// startNodeProcess starts one of the node's programs. It dies with the test
// binary (Pdeathsig) so a killed test leaves no kubelet running; what it
// started (shims, containers) the next node start cleans up.
func (n *node) startNodeProcess(name string, args ...string) (*process, error) {
	logPath := filepath.Join(n.dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	cmd := exec.Command(filepath.Join(n.binDir, name), args...)
	cmd.Dir = n.dir
	cmd.Env = append(os.Environ(), "PATH="+n.binDir+":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p, err := run(cmd, name, logPath, logFile)
	if err != nil {
		return nil, err
	}
	n.procs = append(n.procs, p)
	return p, nil
}

func (n *node) startContainerd(ctx context.Context, timeout time.Duration) error {
	cniDir := filepath.Join(n.dir, "cni")
	if err := os.MkdirAll(cniDir, 0o700); err != nil {
		return err
	}
	conflist := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "gitsync-e2e",
  "plugins": [
    {"type": "bridge", "bridge": "gsync0", "isGateway": true, "ipMasq": false,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %q}}
  ]
}`, PodCIDR, filepath.Join(n.dir, "ipam"))
	if err := os.WriteFile(filepath.Join(cniDir, "10-gitsync.conflist"), []byte(conflist), 0o600); err != nil {
		return err
	}
	// This kind of VM refuses negative oom_score_adj even to root, hence
	// restrict_oom_score_adj; netns and runc state stay in the node's folder.
	config := fmt.Sprintf(`version = 3
root = %[1]q
state = %[2]q
temp = %[3]q
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.nri.v1.nri", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs"]

[grpc]
  address = %[4]q

[ttrpc]
  address = %[5]q

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = %[6]q

[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  tolerate_missing_hugetlb_controller = true
  disable_hugetlb_controller = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        Root = %[7]q
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = %[8]q
`, filepath.Join(n.dir, "containerd", "root"), filepath.Join(n.dir, "containerd", "state"), filepath.Join(n.dir, "containerd", "tmp"),
		n.sock, n.sock+".ttrpc", PauseImage, filepath.Join(n.dir, "runc"), cniDir)
	path := filepath.Join(n.dir, "containerd.toml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return err
	}
	p, err := n.startNodeProcess("containerd", "--config", path)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if done, err := p.exited(); done {
			return false, fmt.Errorf("exited early: %v", err)
		}
		return exec.CommandContext(ctx, filepath.Join(n.binDir, "ctr"), "--address", n.sock, "version").Run() == nil, nil
	})
	if err != nil {
		return p.failure(fmt.Errorf("not serving on %s: %w", n.sock, err))
	}
	return nil
}

// ImportImage imports an image archive (`docker save` or OCI format) into
// the node's containerd, where pods with imagePullPolicy Never find it.
func (e *Env) ImportImage(ctx context.Context, archive string) error {
	if e.node == nil {
		return errors.New("ImportImage needs a control plane started with Options.Node")
	}
	out, err := exec.CommandContext(ctx, filepath.Join(e.node.binDir, "ctr"), "--address", e.node.sock,
		"--namespace", "k8s.io", "images", "import", "--platform", "linux/amd64", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("import image %s into the node: %w: %s", archive, err, out)
	}
	return nil
}

func (n *node) startKubelet(kubeconfig string) (*process, error) {
	ports := make([]int, 2)
	for i := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort(n.ip, "0"))
		if err != nil {
			return nil, err
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	// cgroupfs and failCgroupV1: this kind of machine has cgroup v1
	// hierarchies (never remounted). Image GC and eviction thresholds are
	// out of reach so imported images and test pods stay whatever the disk.
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /
containerRuntimeEndpoint: unix://%[1]s
podLogsDir: %[2]s
volumePluginDir: %[3]s
address: %[4]s
port: %[5]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[6]d
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
failSwapOn: false
protectKernelDefaults: false
clusterDomain: cluster.local
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
serializeImagePulls: false
rotateCertificates: false
serverTLSBootstrap: false
`, n.sock, filepath.Join(n.dir, "pod-logs"), filepath.Join(n.dir, "volume-plugins"), n.ip, ports[0], ports[1])
	path := filepath.Join(n.dir, "kubelet.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return nil, err
	}
	return n.startNodeProcess("kubelet",
		"--config="+path,
		"--kubeconfig="+kubeconfig,
		"--root-dir="+filepath.Join(n.dir, "kubelet"),
		"--cert-dir="+filepath.Join(n.dir, "kubelet", "pki"),
		"--hostname-override="+NodeName,
		"--node-ip="+n.ip,
	)
}

func (n *node) startKubeProxy(kubeconfig string) error {
	health, err := freePort()
	if err != nil {
		return err
	}
	metrics, err := freePort()
	if err != nil {
		return err
	}
	// Conntrack limits at 0: kube-proxy leaves the machine's alone.
	config := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %[1]s
hostnameOverride: %[2]s
mode: iptables
clusterCIDR: %[3]s
healthzBindAddress: 127.0.0.1:%[4]d
metricsBindAddress: 127.0.0.1:%[5]d
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables:
  localhostNodePorts: false
`, kubeconfig, NodeName, PodCIDR, health, metrics)
	path := filepath.Join(n.dir, "kube-proxy.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return err
	}
	_, err = n.startNodeProcess("kube-proxy", "--config="+path)
	return err
}

func (e *Env) waitRealNodeReady(ctx context.Context, kubelet *process, timeout time.Duration) error {
	if err := e.waitNodeCondition(ctx, NodeName, e.node.procs, timeout); err != nil {
		return kubelet.failure(fmt.Errorf("Node %s never became Ready: %w", NodeName, err))
	}
	return nil
}

// stopNode stops kube-proxy and kubelet, kills every pod and containerd's
// shims, stops containerd and restores the machine as it was found. It is
// safe on a node that only partly started.
func (e *Env) stopNode() error {
	n := e.node
	if n == nil || n.lock == nil {
		return nil
	}
	for i := len(n.procs) - 1; i >= 0; i-- {
		if n.procs[i].name == "containerd" {
			// Pods go before their runtime, so its shims see them exit.
			_ = killCgroupProcs(n.saved.CgroupDirs)
		}
		n.procs[i].stop()
	}
	var err error
	if n.saved != nil {
		err = restoreHost(n.saved)
		if err == nil {
			_ = os.Remove(filepath.Join(nodeLockDir, "state.json"))
		}
	}
	_ = n.lock.Close()
	n.lock = nil
	return err
}

// NodeLog returns the tail of one of the node's program logs (kubelet,
// containerd, kube-proxy) for a failing test's message.
func (e *Env) NodeLog(name string, lines int) string {
	if e.node == nil {
		return ""
	}
	return LogTail(filepath.Join(e.node.dir, name+".log"), lines)
}

// nodeBinaries are the cached programs a node runs beyond the apiserver.
var nodeBinaries = []string{"kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2", "ctr", "pause"}

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete"]
  resources: [{group: "", resources: ["configmaps"]}]
- level: None
`

// AuditLog is the apiserver's audit log of a control plane with a node: one
// JSON event per line for every ConfigMap create, update, patch and delete.
func (e *Env) AuditLog() string {
	return filepath.Join(e.dir, "kube-apiserver", "audit.log")
}

// KillContainer kills (SIGKILL) every process of a running container of a
// pod on the node, as a crash or the OOM killer would: neither the kubelet
// nor the apiserver is asked, the kubelet only sees it die.
func (e *Env) KillContainer(pod *corev1.Pod, container string) error {
	id := ""
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container {
			_, id, _ = strings.Cut(cs.ContainerID, "://")
		}
	}
	if id == "" {
		return fmt.Errorf("pod %s/%s has no running container %s", pod.Namespace, pod.Name, container)
	}
	killed := 0
	for _, root := range kubepodsCgroups() {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() || filepath.Base(path) != id {
				return nil
			}
			data, _ := os.ReadFile(filepath.Join(path, "cgroup.procs"))
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
					killed++
				}
			}
			return filepath.SkipDir
		})
	}
	if killed == 0 {
		return fmt.Errorf("no process of container %s (%s) of pod %s/%s found in the kubepods cgroups", container, id, pod.Namespace, pod.Name)
	}
	return nil
}

// nodeDir makes the folder the node keeps its state in: the control plane's,
// unless a Unix socket cannot be renamed there. The kubelet binds each of its
// sockets under a temporary name and renames it into place, and exits when
// that fails; a machine whose temporary folder answers such a rename with
// EXDEV gets a folder in /dev/shm instead (restoreHost removes either).
func nodeDir(envDir string) (string, error) {
	dir := filepath.Join(envDir, "node")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	probeErr := renameSocket(dir)
	if probeErr == nil {
		return dir, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	shm, err := os.MkdirTemp("/dev/shm", "gitsync-node-")
	if err != nil {
		return "", fmt.Errorf("the node cannot keep sockets in %s (%v) and no folder in /dev/shm: %w", envDir, probeErr, err)
	}
	if err := renameSocket(shm); err != nil {
		_ = os.RemoveAll(shm)
		return "", fmt.Errorf("the node cannot keep sockets in %s (%v) nor in /dev/shm: %w", envDir, probeErr, err)
	}
	fmt.Fprintf(os.Stderr, "testenv: the node keeps its files in %s: %v\n", shm, probeErr)
	return shm, nil
}

// renameSocket binds a Unix socket in dir and renames it, as the kubelet does.
func renameSocket(dir string) error {
	tmp, final := filepath.Join(dir, "probe.tmp"), filepath.Join(dir, "probe.sock")
	l, err := net.Listen("unix", tmp)
	if err != nil {
		return err
	}
	defer l.Close()
	if err := os.Rename(tmp, final); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Remove(final)
}
