package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/webui"
)

// uiOptions are the inputs of gitsync ui.
type uiOptions struct {
	Target targetOptions
	// AllNamespaces shows the GitSyncs of every namespace.
	AllNamespaces bool
	// Address is the loopback address to listen on.
	Address string
	// SyncTimeout bounds the first read of the watched GitSyncs and Events.
	SyncTimeout time.Duration

	Out, ErrOut io.Writer
	// kube is the kubeconfig flags, for the previews' diff command.
	kube *genericclioptions.ConfigFlags
}

// newUICmd returns the ui command.
func newUICmd(kube *genericclioptions.ConfigFlags) *cobra.Command {
	o := &uiOptions{Target: targetOptions{Flags: kube}, kube: kube}
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve a local web view of the GitSyncs",
		Long: `Serve a web page on this machine's loopback address that shows every
GitSync of the namespace (-A: of every namespace) with its state, revision,
last applied time and message, and for one GitSync the tree of its objects
with their health, its Events, its history, and a preview of what a branch
would change (the engine of gitsync diff --gitsync). The pages follow the
cluster through watches and update themselves. The only actions are
reconcile, suspend and resume.

Everything is read and done with your kubeconfig's credentials, as the other
commands do: the page shows what you may read and acts as you. It listens on
loopback only, answers only to its own address, and takes an action only
from a form of its own pages. Secret values are never shown: objects are
listed by name, and a preview masks Secret data as ***.

Keys: j/k move between GitSyncs or objects, Enter opens, / filters the list,
Esc goes back to the list.`,
		Example: `  # The GitSyncs of every namespace, at http://127.0.0.1:7780/
  gitsync ui -A

  # Another port
  gitsync ui -n prod --address 127.0.0.1:9000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Out, o.ErrOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return o.Run(ctx)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withExitCode(exitError, err) })
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Show the GitSyncs of every namespace.")
	cmd.Flags().StringVar(&o.Address, "address", "127.0.0.1:7780", "Loopback address to serve on (port 0 picks a free one).")
	cmd.Flags().DurationVar(&o.SyncTimeout, "sync-timeout", time.Minute, "How long the first read of GitSyncs and Events may take.")
	return cmd
}

// Run serves the view until ctx ends.
func (o *uiOptions) Run(ctx context.Context) error {
	tgt, err := o.Target.Connect()
	if err != nil {
		return withExitCode(exitError, err)
	}
	ns := tgt.Namespace
	if o.AllNamespaces {
		ns = ""
	}
	ln, err := webui.Listen(o.Address)
	if err != nil {
		return withExitCode(exitError, err)
	}
	defer ln.Close()
	view, err := newClusterView(ctx, tgt, ns, o.kube, o.SyncTimeout)
	if err != nil {
		return withExitCode(exitError, err)
	}
	srv, err := webui.New(view, sensitive.String) // the pages are this process's output, as stdout is
	if err != nil {
		return withExitCode(exitError, err)
	}
	scope := "namespace " + ns
	if ns == "" {
		scope = "every namespace"
	}
	fmt.Fprintf(o.Out, "Serving the GitSyncs of %s at http://%s/ (Ctrl-C stops)\n", scope, ln.Addr())
	return srv.Serve(ctx, ln)
}

// clusterView is the web view's Backend: GitSyncs and their Events from
// the user's watches, objects read with the user's credentials when a
// page asks, and actions taken as the user.
type clusterView struct {
	tgt     *connectedCluster
	cache   cache.Cache
	kube    *genericclioptions.ConfigFlags
	changes chan struct{}
}

// newClusterView starts watching the GitSyncs of ns ("" every namespace)
// and the Events of GitSyncs, and returns once both are read.
func newClusterView(ctx context.Context, tgt *connectedCluster, ns string, kube *genericclioptions.ConfigFlags, timeout time.Duration) (*clusterView, error) {
	// One plain LIST first: a missing CRD or a refusal is then an error to
	// read, not a watch that retries in silence.
	probe := &gitsyncv1.GitSyncList{}
	var opts []client.ListOption
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	switch err := tgt.Client.List(ctx, probe, append(opts, client.Limit(1))...); {
	case meta.IsNoMatchError(err):
		return nil, errGitSyncNotServed
	case err != nil:
		return nil, fmt.Errorf("list GitSyncs: %w", err)
	}
	copts := cache.Options{Scheme: cliScheme(), Mapper: tgt.Mapper,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Event{}: {Field: fields.OneTermEqualSelector("involvedObject.kind", "GitSync")},
		}}
	if ns != "" {
		copts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	}
	c, err := cache.New(tgt.Config, copts)
	if err != nil {
		return nil, err
	}
	v := &clusterView{tgt: tgt, cache: c, kube: kube, changes: make(chan struct{}, 1)}
	for _, obj := range []client.Object{&gitsyncv1.GitSync{}, &corev1.Event{}} {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { v.changed() },
			UpdateFunc: func(any, any) { v.changed() },
			DeleteFunc: func(any) { v.changed() },
		}); err != nil {
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	syncCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !c.WaitForCacheSync(syncCtx) {
		return nil, fmt.Errorf("watching GitSyncs and their Events took longer than %s (may you watch them? try kubectl get gitsyncs --watch)", timeout)
	}
	return v, nil
}

// changed tells the server something shown may have changed; a change
// not yet taken covers this one.
func (v *clusterView) changed() {
	select {
	case v.changes <- struct{}{}:
	default:
	}
}

// Changes implements webui.Backend.
func (v *clusterView) Changes() <-chan struct{} { return v.changes }

// List implements webui.Backend.
func (v *clusterView) List(ctx context.Context) ([]webui.Summary, error) {
	list := &gitsyncv1.GitSyncList{}
	if err := v.cache.List(ctx, list); err != nil {
		return nil, err
	}
	out := make([]webui.Summary, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, webui.SummaryOf(&list.Items[i]))
	}
	slices.SortFunc(out, func(a, b webui.Summary) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out, nil
}

// Detail implements webui.Backend: the objects are read now, with their
// health judged as gitsync tree judges it (the GitSync's own rules).
func (v *clusterView) Detail(ctx context.Context, key types.NamespacedName) (*webui.Detail, error) {
	gs := &gitsyncv1.GitSync{}
	if err := v.cache.Get(ctx, key, gs); err != nil {
		return nil, fmt.Errorf("GitSync/%s/%s: %w", key.Namespace, key.Name, err)
	}
	d := webui.DetailOf(gs)
	inv, health, err := inventoryHealth(ctx, v.tgt, gs, &healthRuleFlags{})
	if err != nil {
		return nil, err
	}
	for i, e := range inv {
		te := health[i]
		d.Objects = append(d.Objects, webui.Object{Group: e.ID.Group, Kind: e.ID.Kind, Namespace: e.ID.Namespace,
			Name: e.ID.Name, Status: te.Status, Message: te.Message, Pending: te.Pending})
	}
	events := &corev1.EventList{}
	if err := v.cache.List(ctx, events, client.InNamespace(key.Namespace)); err != nil {
		return nil, err
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Name != key.Name || (e.InvolvedObject.UID != "" && e.InvolvedObject.UID != gs.UID) {
			continue
		}
		d.Events = append(d.Events, webui.Event{Time: eventTime(e), Type: e.Type, Reason: e.Reason,
			Message: e.Message, Count: e.Count, ReportingSource: e.ReportingController})
	}
	slices.SortStableFunc(d.Events, func(a, b webui.Event) int { return b.Time.Compare(a.Time) })
	return d, nil
}

// Preview implements webui.Backend: gitsync diff --gitsync, of branch when
// given, as this command prints it (Secret data masked).
func (v *clusterView) Preview(ctx context.Context, key types.NamespacedName, branch string) (string, error) {
	args := []string{"--gitsync", key.Namespace + "/" + key.Name}
	if branch != "" {
		args = append(args, "--branch="+branch) // one argument: a branch is never read as a flag
	}
	var out bytes.Buffer
	cmd := newDiffCmd(v.kube)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(ctx)
	var ee *exitErr
	if errors.As(err, &ee) && ee.Code == exitDifferences {
		err = nil
	}
	return strings.TrimRight(out.String(), "\n"), err
}

// Reconcile implements webui.Backend, as gitsync reconcile does.
func (v *clusterView) Reconcile(ctx context.Context, key types.NamespacedName) error {
	gs, err := getGitSync(ctx, v.tgt.Client, key)
	if err != nil {
		return err
	}
	_, err = requestReconcile(ctx, v.tgt.Client, gs, time.Now())
	return err
}

// Suspend implements webui.Backend, as gitsync suspend and resume do.
func (v *clusterView) Suspend(ctx context.Context, key types.NamespacedName, suspend bool) error {
	return setSuspend(ctx, v.tgt.Client, key, suspend)
}
