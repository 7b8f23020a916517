package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	sourcegit "gitsync.dev/gitsync/source/git"
)

// statusOptions are the inputs of gitsync status.
type statusOptions struct {
	Target targetOptions
	// Name selects one GitSync; empty lists them all.
	Name string
	// AllNamespaces lists GitSyncs of every namespace.
	AllNamespaces bool
	// Output is "" (table), "json" or "yaml".
	Output string

	Out, ErrOut io.Writer
	// now is the clock ages are computed against.
	now func() time.Time
}

// newStatusCmd returns the status command.
func newStatusCmd(kube *genericclioptions.ConfigFlags) *cobra.Command {
	o := &statusOptions{now: time.Now}
	o.Target.Flags = kube
	cmd := &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show the state of GitSync objects",
		Long: `Show the state of GitSync objects: whether they are Ready, the revision last
applied, when Ready last changed, and the Ready condition's message.

Without NAME every GitSync of the namespace is listed; -A lists all namespaces.`,
		Example: `  # List the GitSyncs of the current namespace
  gitsync status

  # List the GitSyncs of every namespace
  gitsync status -A

  # Show one GitSync in full, as YAML
  gitsync status web -n prod -o yaml`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeGitSyncs(kube),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Out, o.ErrOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if len(args) == 1 {
				o.Name = args[0]
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List GitSyncs in all namespaces.")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml.")
	return cmd
}

// Validate checks the flags.
func (o *statusOptions) Validate() error {
	if o.Name != "" && o.AllNamespaces {
		return errors.New("a NAME cannot be combined with -A; give -n NAMESPACE instead")
	}
	return validateOutput(o.Output, outputText, outputJSON, outputYAML)
}

// Run reads the GitSyncs and prints them.
func (o *statusOptions) Run(ctx context.Context) error {
	tgt, err := o.Target.Connect()
	if err != nil {
		return err
	}
	list := &gitsyncv1.GitSyncList{}
	if o.Name != "" {
		gs := gitsyncv1.GitSync{}
		err = tgt.Client.Get(ctx, client.ObjectKey{Namespace: tgt.Namespace, Name: o.Name}, &gs)
		list.Items = append(list.Items, gs)
	} else {
		var opts []client.ListOption
		if !o.AllNamespaces {
			opts = append(opts, client.InNamespace(tgt.Namespace))
		}
		err = tgt.Client.List(ctx, list, opts...)
	}
	if meta.IsNoMatchError(err) {
		return errGitSyncNotServed
	}
	if err != nil {
		return err
	}
	for i := range list.Items {
		list.Items[i].APIVersion, list.Items[i].Kind = gitsyncv1.GroupVersion.String(), "GitSync"
		list.Items[i].ManagedFields = nil
	}
	switch o.Output {
	case outputJSON, outputYAML:
		return o.printObjects(list)
	}
	if len(list.Items) == 0 {
		if o.AllNamespaces {
			fmt.Fprintln(o.ErrOut, "No GitSyncs found.")
		} else {
			fmt.Fprintf(o.ErrOut, "No GitSyncs found in %s namespace.\n", tgt.Namespace)
		}
		return nil
	}
	return o.printTable(list.Items)
}

// printObjects prints one GitSync as itself, several as a GitSyncList.
func (o *statusOptions) printObjects(list *gitsyncv1.GitSyncList) error {
	var v any = list
	if o.Name != "" {
		v = &list.Items[0]
	} else {
		list.APIVersion, list.Kind = gitsyncv1.GroupVersion.String(), "GitSyncList"
	}
	if o.Output == outputJSON {
		return writeJSON(o.Out, v)
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = o.Out.Write(b)
	return err
}

// printTable prints the kubectl-style table.
func (o *statusOptions) printTable(items []gitsyncv1.GitSync) error {
	tw := newTable(o.Out)
	header := "NAME\tREADY\tREVISION\tLAST APPLIED\tMESSAGE"
	if o.AllNamespaces {
		header = "NAMESPACE\t" + header
	}
	fmt.Fprintln(tw, header)
	for _, gs := range items {
		ready, since, msg := "Unknown", "<none>", ""
		if c := meta.FindStatusCondition(gs.Status.Conditions, gitsyncv1.ConditionReady); c != nil {
			ready, msg = string(c.Status), c.Message
		}
		if t := gs.Status.LastAppliedTime; t != nil {
			since = o.age(*t)
		}
		if gs.Spec.Suspend {
			ready += " (suspended)"
		}
		// spec.drift.mode Detect: in sync with Git is not what Ready says.
		if c := meta.FindStatusCondition(gs.Status.Conditions, gitsyncv1.ConditionDrifted); c != nil && c.Status == metav1.ConditionTrue {
			ready += " (drifted)"
			msg = c.Message
		}
		if gs.Status.LastAppliedSigner != "" {
			msg += " (signed by " + gs.Status.LastAppliedSigner + ")"
		}
		row := strings.Join([]string{gs.Name, ready, sourcegit.ShortRevision(gs.Status.LastAppliedRevision), since, oneLine(msg)}, "\t")
		if o.AllNamespaces {
			row = gs.Namespace + "\t" + row
		}
		fmt.Fprintln(tw, row)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if o.Name != "" && len(items) == 1 {
		return o.printHistory(items[0].Status.History)
	}
	return nil
}

// printHistory prints one GitSync's status.history, newest first.
func (o *statusOptions) printHistory(h []gitsyncv1.HistoryEntry) error {
	if len(h) == 0 {
		return nil
	}
	fmt.Fprintln(o.Out)
	tw := newTable(o.Out)
	fmt.Fprintln(tw, "HISTORY\tOUTCOME\tWHEN\tDURATION\tDIGEST")
	for _, e := range h {
		digest := e.Digest
		if len(digest) > len("sha256:")+12 {
			digest = digest[:len("sha256:")+12]
		}
		if digest == "" {
			digest = "<none>"
		}
		fmt.Fprintln(tw, strings.Join([]string{sourcegit.ShortRevision(e.Revision), e.Outcome, o.age(e.Time), e.Duration.Duration.String(), digest}, "\t"))
	}
	return tw.Flush()
}

// age formats how long ago t was, like kubectl's AGE column.
func (o *statusOptions) age(t metav1.Time) string {
	if t.IsZero() {
		return "<none>"
	}
	now := time.Now
	if o.now != nil {
		now = o.now
	}
	return duration.HumanDuration(now().Sub(t.Time)) + " ago"
}

// oneLine folds a multi-line message into one table cell.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
