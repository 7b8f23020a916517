package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options says which parts of a control plane a test package needs.
type Options struct {
	// Workloads adds kube-controller-manager, kube-scheduler and kwok with one
	// fake Node, so Deployments and StatefulSets really become Available. It
	// costs a few seconds of startup and some memory, so only packages that
	// wait for workload health ask for it.
	Workloads bool
	// Node adds a real node instead: kube-controller-manager,
	// kube-scheduler, containerd, kubelet and kube-proxy on this machine, so
	// pods really run (see node.go). It needs root and changes host state,
	// which Stop restores; one node runs per machine at a time. The
	// apiserver then listens on the host address (NodeIP).
	Node bool
	// StartTimeout bounds the start of each program; zero means one minute.
	StartTimeout time.Duration
}

// Env is a running control plane.
type Env struct {
	// Config reaches the apiserver as an administrator (system:masters).
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file for Config, for binaries
	// (gitsync, kubectl) started by tests.
	Kubeconfig string
	// Client is a controller-runtime client with the core and apiextensions
	// types registered; it reads from the apiserver directly (no cache).
	Client client.Client
	// Scheme is the scheme Client uses.
	Scheme *runtime.Scheme
	// BinDir holds the control-plane binaries (and kubectl).
	BinDir string

	dir    string
	env    *envtest.Environment
	procs  []*process
	apiOut *syncBuffer
	node   *node
}

// Start starts etcd and kube-apiserver (and, with opts.Workloads, the
// programs that run Pods) and returns when all are serving. A failure names the
// program that failed and shows the tail of its log.
func Start(ctx context.Context, opts Options) (*Env, error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = time.Minute
	}
	names := []string{"etcd", "kube-apiserver"}
	if opts.Workloads {
		names = append(names, "kube-controller-manager", "kube-scheduler", "kwok")
	}
	if opts.Node {
		if err := nodePreflight(); err != nil {
			return nil, err
		}
		names = append(names, nodeBinaries...)
	}
	binDir, err := BinDir(names...)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gitsync-testenv-")
	if err != nil {
		return nil, fmt.Errorf("testenv work dir: %w", err)
	}
	e := &Env{BinDir: binDir, dir: dir}
	if err := e.startAPIServer(opts); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if opts.Workloads {
		if err := e.startWorkloads(ctx, opts); err != nil {
			_ = e.Stop()
			return nil, err
		}
	}
	if opts.Node {
		if err := e.startNode(ctx, opts); err != nil {
			if stopErr := e.Stop(); stopErr != nil {
				err = fmt.Errorf("%w (and stopping: %v)", err, stopErr)
			}
			return nil, err
		}
	}
	return e, nil
}

func (e *Env) startAPIServer(opts Options) error {
	etcdOut, apiOut := &syncBuffer{}, &syncBuffer{}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    e.BinDir,
		ControlPlaneStartTimeout: opts.StartTimeout,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	env.ControlPlane.Etcd = &envtest.Etcd{Out: etcdOut, Err: etcdOut}
	// A certificate directory of our own survives a stop, so a restarted
	// apiserver keeps its CA and serving certificate and every client
	// config stays valid (RestartAPIServer).
	certDir := filepath.Join(e.dir, "kube-apiserver")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return fmt.Errorf("apiserver cert dir: %w", err)
	}
	env.ControlPlane.APIServer = &envtest.APIServer{Out: apiOut, Err: apiOut, CertDir: certDir}
	if opts.Node {
		if err := e.configureNodeAPIServer(env.ControlPlane.APIServer, certDir); err != nil {
			return err
		}
	}
	e.apiOut = apiOut
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return fmt.Errorf("control plane failed to start: %w\n--- last lines of etcd ---\n%s\n--- last lines of kube-apiserver ---\n%s",
			err, etcdOut.Tail(30), apiOut.Tail(30))
	}
	cfg.QPS, cfg.Burst = 1000, 2000 // a local test apiserver: client-side throttling would only hide our own request counts
	e.env, e.Config = env, cfg

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("testenv client: %w", err)
	}
	e.Client, e.Scheme = c, scheme

	e.Kubeconfig = filepath.Join(e.dir, "kubeconfig")
	if err := os.WriteFile(e.Kubeconfig, env.KubeConfig, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// Stop stops every program Start started and removes their files.
func (e *Env) Stop() error {
	nodeErr := e.stopNode()
	for i := len(e.procs) - 1; i >= 0; i-- {
		e.procs[i].stop()
	}
	var err error
	if e.env != nil {
		err = e.env.Stop()
	}
	if nodeErr != nil {
		// The node's folder may still hold mounts; leave it to the next
		// node start, which restores the machine from the saved state.
		return errors.Join(nodeErr, err)
	}
	_ = os.RemoveAll(e.dir)
	return err
}

// Namespace creates a namespace with a unique name for one test and deletes it
// when the test ends.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t-" + utilrand.String(8)}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create test namespace: %v", err)
	}
	t.Cleanup(func() {
		_ = e.Client.Delete(context.Background(), ns)
	})
	return ns.Name
}

// Main starts a control plane for a test package, runs its tests and stops
// it. Use it from TestMain:
//
//	var env *testenv.Env
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{}, &env)) }
func Main(m *testing.M, opts Options, out **Env) int {
	env, err := Start(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	*out = env
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: stop:", err)
	}
	return code
}
