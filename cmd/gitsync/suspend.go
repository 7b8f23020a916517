package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// suspendOptions are the inputs of gitsync suspend and gitsync resume.
type suspendOptions struct {
	Target targetOptions
	// Name is the GitSync, in the target namespace.
	Name string
	// Suspend is the value spec.suspend gets.
	Suspend bool

	Out io.Writer
}

// newSuspendCmd returns the suspend command.
func newSuspendCmd(kube *genericclioptions.ConfigFlags) *cobra.Command {
	return newSuspendingCmd(kube, true, &cobra.Command{
		Use:   "suspend NAME",
		Short: "Stop the agent from syncing a GitSync",
		Long: `Stop the agent from syncing a GitSync: spec.suspend is set, so nothing is
applied, pruned or repaired until gitsync resume. The objects stay as they are.`,
		Example: `  # Hold web in prod while debugging by hand
  gitsync suspend web -n prod`,
	})
}

// newResumeCmd returns the resume command.
func newResumeCmd(kube *genericclioptions.ConfigFlags) *cobra.Command {
	return newSuspendingCmd(kube, false, &cobra.Command{
		Use:   "resume NAME",
		Short: "Let the agent sync a suspended GitSync again",
		Long: `Let the agent sync a suspended GitSync again: spec.suspend is cleared, and
the agent syncs it at once (a spec change starts a reconcile).`,
		Example: `  # Resume web in prod, then wait for the outcome
  gitsync resume web -n prod && gitsync reconcile web -n prod --wait`,
	})
}

func newSuspendingCmd(kube *genericclioptions.ConfigFlags, suspend bool, cmd *cobra.Command) *cobra.Command {
	o := &suspendOptions{Target: targetOptions{Flags: kube}, Suspend: suspend}
	cmd.Args = cobra.ExactArgs(1)
	cmd.ValidArgsFunction = completeGitSyncs(kube)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		o.Out, o.Name = cmd.OutOrStdout(), args[0]
		return o.Run(cmd.Context())
	}
	return cmd
}

// Run sets spec.suspend.
func (o *suspendOptions) Run(ctx context.Context) error {
	tgt, gs, err := connectGitSync(ctx, &o.Target, o.Name)
	if err != nil {
		return err
	}
	key := client.ObjectKeyFromObject(gs)
	if err := setSuspend(ctx, tgt.Client, key, o.Suspend); err != nil {
		return withExitCode(exitError, err)
	}
	verb := "resumed"
	if o.Suspend {
		verb = "suspended"
	}
	fmt.Fprintf(o.Out, "GitSync/%s/%s %s\n", key.Namespace, key.Name, verb)
	return nil
}

// setSuspend sets (true) or clears spec.suspend.
func setSuspend(ctx context.Context, c client.Client, key client.ObjectKey, suspend bool) error {
	return patchGitSync(ctx, c, key, fmt.Sprintf(`{"spec":{"suspend":%t}}`, suspend))
}
