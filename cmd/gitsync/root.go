package main

import (
	"github.com/spf13/cobra"
)

// newRootCmd returns the gitsync command with every subcommand attached.
func newRootCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gitsync",
		Short: "Make a Kubernetes cluster look like a directory of manifests in Git",
		Long: `gitsync makes a Kubernetes cluster look like a directory of manifests in Git.

Run it in the cluster as an agent (gitsync run), or from a laptop or CI job to
see and apply what a directory or repository would change (gitsync build,
gitsync diff, gitsync apply, gitsync status).`,
		Example: `  # Show what ./deploy would change in the current kubectl context
  gitsync diff ./deploy

  # Apply it, recording an inventory named "web" so later applies can prune
  gitsync apply ./deploy --name web --prune

  # Show the GitSync objects in every namespace
  gitsync status -A`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// kubectl's connection flags, once for every command (run included).
	kube := newKubeFlags()
	(&targetOptions{Flags: kube}).AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(newDiffCmd(kube))
	cmd.AddCommand(newApplyCmd(kube))
	cmd.AddCommand(newBuildCmd(kube))
	cmd.AddCommand(newStatusCmd(kube))
	cmd.AddCommand(newRunCmd(kube))
	cmd.AddCommand(newReconcileCmd(kube))
	cmd.AddCommand(newSuspendCmd(kube))
	cmd.AddCommand(newResumeCmd(kube))
	cmd.AddCommand(newTreeCmd(kube))
	cmd.AddCommand(newTraceCmd(kube))
	cmd.AddCommand(newEventsCmd(kube))
	cmd.AddCommand(newUICmd(kube))
	cmd.AddCommand(newPushCmd())
	registerKubeCompletions(cmd, kube)
	cmd.AddCommand(newVersionCmd())
	return cmd
}
