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

// TargetOptions select the cluster and default namespace the way kubectl does:
// --kubeconfig (else $KUBECONFIG, else ~/.kube/config), --context and
// -n/--namespace (else the context's namespace, else "default").
type TargetOptions struct {
	// Kubeconfig is an explicit kubeconfig file; empty follows kubectl's rules.
	Kubeconfig string
	// Context overrides the kubeconfig's current context.
	Context string
	// Namespace is the default namespace for namespaced objects that name
	// none, and where the inventory of --name lives.
	Namespace string
}

// AddFlags registers --kubeconfig, --context and -n/--namespace.
func (o *TargetOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "Path to the kubeconfig file to use (default: $KUBECONFIG or ~/.kube/config).")
	fs.StringVar(&o.Context, "context", "", "The name of the kubeconfig context to use.")
	fs.StringVarP(&o.Namespace, "namespace", "n", "", "Namespace for objects that name none, and of the --name inventory (default: the context's namespace).")
}

// Target is a connected cluster: everything the engine packages need.
type Target struct {
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
func (o *TargetOptions) Connect() (*Target, error) {
	quietControllerRuntime()
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context}
	overrides.Context.Namespace = o.Namespace
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig namespace: %w", err)
	}
	cfg.UserAgent = "gitsync-cli"
	if cfg.QPS == 0 {
		// client-go's default (5 requests/s) would make a 1,000-object apply
		// take minutes; the apiserver's priority and fairness protects it,
		// and the agent uses the same budget (--kube-api-qps).
		cfg.QPS, cfg.Burst = cliQPS, cliBurst
	}
	// Server warnings (deprecated APIs, unknown fields) read as kubectl
	// prints them, once each, instead of as klog lines.
	cfg.WarningHandler = rest.NewWarningWriter(os.Stderr, rest.WarningWriterOptions{Deduplicate: true, Color: colorEnabled(os.Stderr)})
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
	return &Target{Config: cfg, Namespace: ns, Client: c, Mapper: mapper, Discovery: disc}, nil
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
