package main

import (
	"fmt"
	"os"
	"sync"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
)

// targetOptions select the cluster, identity and default namespace with
// kubectl's own flags (k8s.io/cli-runtime ConfigFlags): --kubeconfig (else
// $KUBECONFIG, else ~/.kube/config), --context, --cluster, --user, --server,
// --token, --as, --as-group, --request-timeout, --insecure-skip-tls-verify,
// -n/--namespace (else the context's namespace, else "default") and the rest.
// The root command registers them once as persistent flags, so every
// command, run included, reads them the same way.
type targetOptions struct {
	// Flags are the connection flags; nil means kubectl's defaults.
	Flags *genericclioptions.ConfigFlags
}

// newKubeFlags returns kubectl's connection flags without --cache-dir (run
// has its own, for Git; the CLI keeps no discovery cache) and without the
// persistent-config memo (tests build several targets in one process).
func newKubeFlags() *genericclioptions.ConfigFlags {
	f := genericclioptions.NewConfigFlags(false)
	f.CacheDir = nil
	return f
}

// targetFor is the targetOptions of an explicit kubeconfig and namespace
// (tests, and callers that do not parse flags).
func targetFor(kubeconfig, namespace string) targetOptions {
	f := newKubeFlags()
	*f.KubeConfig, *f.Namespace = kubeconfig, namespace
	return targetOptions{Flags: f}
}

// AddFlags registers kubectl's connection flags on fs.
func (o *targetOptions) AddFlags(fs *pflag.FlagSet) {
	if o.Flags == nil {
		o.Flags = newKubeFlags()
	}
	o.Flags.AddFlags(fs)
	fs.Lookup("kubeconfig").Usage = "Path to the kubeconfig file to use (default: $KUBECONFIG or ~/.kube/config)."
	fs.Lookup("namespace").Usage = "Namespace for objects that name none, of the --name inventory and of the GitSync a command names (default: the context's namespace)."
}

// clientConfig is the kubeconfig loader with the flags' overrides applied.
func (o *targetOptions) clientConfig() clientcmd.ClientConfig {
	if o.Flags == nil {
		o.Flags = newKubeFlags()
	}
	return o.Flags.ToRawKubeConfigLoader()
}

// RESTConfig is the rest config the flags select, without the CLI's
// defaults (run sets its own user agent and budget).
func (o *targetOptions) RESTConfig() (*rest.Config, error) {
	cfg, err := o.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}

// Namespace is the namespace the flags select: -n, else the context's, else
// "default".
func (o *targetOptions) Namespace() (string, error) {
	ns, _, err := o.clientConfig().Namespace()
	if err != nil {
		return "", fmt.Errorf("kubeconfig namespace: %w", err)
	}
	return ns, nil
}

// connectedCluster is a connected cluster: everything the engine packages need.
type connectedCluster struct {
	// Config reaches the apiserver with the user's credentials.
	Config *rest.Config
	// Namespace is the resolved default namespace.
	Namespace string
	// Client reads and writes directly (no cache), and can watch.
	Client client.WithWatch
	// Mapper is discovery-backed and lazy.
	Mapper meta.RESTMapper
	// Discovery lists served kinds (pruning checks what a Namespace holds).
	Discovery discovery.DiscoveryInterface
}

// Connect loads the kubeconfig and builds the clients. It makes no request:
// an unreachable cluster is reported by the first call that needs it.
func (o *targetOptions) Connect() (*connectedCluster, error) {
	quietControllerRuntime()
	cfg, err := o.RESTConfig()
	if err != nil {
		return nil, err
	}
	ns, err := o.Namespace()
	if err != nil {
		return nil, err
	}
	return connect(cfg, ns)
}

// connect builds the clients of cfg with the CLI's defaults: its user
// agent, request budget and warning printer.
func connect(cfg *rest.Config, ns string) (*connectedCluster, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "gitsync-cli"
	if cfg.QPS == 0 {
		// client-go's default (5 requests/s) would make a 1,000-object apply
		// take minutes; the apiserver's priority and fairness protects it,
		// and the agent uses the same budget (--kube-api-qps).
		cfg.QPS, cfg.Burst = cliQPS, cliBurst
	}
	// Server warnings (deprecated APIs, unknown fields) read as kubectl
	// prints them, once each, instead of as klog lines.
	cfg.WarningHandler = rest.NewWarningWriter(stderr, rest.WarningWriterOptions{Deduplicate: true, Color: colorEnabled(os.Stderr)})
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{HTTPClient: hc, Mapper: mapper, Scheme: cliScheme()})
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &connectedCluster{Config: cfg, Namespace: ns, Client: c, Mapper: mapper, Discovery: disc}, nil
}

// cliScheme knows the built-in kinds, CRDs and GitSync.
func cliScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, gitsyncv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // static registrations cannot fail
		}
	}
	return s
}

// cliQPS and cliBurst are the CLI's client-side request budget.
const cliQPS, cliBurst = 1000, 2000

var quietOnce sync.Once

// quietControllerRuntime discards controller-runtime's and client-go's (klog)
// logs: the CLI reports through its own output, server warnings go through
// the warning handler, and an unset controller-runtime logger prints a
// warning with a stack trace.
func quietControllerRuntime() {
	quietOnce.Do(func() {
		ctrllog.SetLogger(logr.Discard())
		klog.SetLogger(logr.Discard())
	})
}
