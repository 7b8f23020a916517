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
see and apply what a directory or repository would change (gitsync diff,
gitsync apply, gitsync status).`,
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
	(&TargetOptions{Flags: kube}).AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(NewDiffCmd(kube))
	cmd.AddCommand(NewApplyCmd(kube))
	cmd.AddCommand(NewStatusCmd(kube))
	cmd.AddCommand(newRunCmd(kube))
	cmd.AddCommand(NewReconcileCmd(kube))
	cmd.AddCommand(NewSuspendCmd(kube))
	cmd.AddCommand(NewResumeCmd(kube))
	cmd.AddCommand(NewTreeCmd(kube))
	cmd.AddCommand(NewEventsCmd(kube))
	registerKubeCompletions(cmd, kube)
	cmd.AddCommand(NewVersionCmd())
	return cmd
}
