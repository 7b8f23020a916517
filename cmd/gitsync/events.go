package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// eventsOptions are the inputs of gitsync events.
type eventsOptions struct {
	Target targetOptions
	// Name is the GitSync, in the target namespace.
	Name string
	// Output is "" (table), "json" or "yaml".
	Output string

	Out, ErrOut io.Writer
	now         func() time.Time
}

// newEventsCmd returns the events command.
func newEventsCmd(kube *genericclioptions.ConfigFlags) *cobra.Command {
	o := &eventsOptions{Target: targetOptions{Flags: kube}, now: time.Now}
	cmd := &cobra.Command{
		Use:   "events NAME",
		Short: "Show the Events the agent recorded for a GitSync",
		Long: `Show the Events the agent recorded for a GitSync, oldest first: what each
sync changed, prunes it held back, and why it failed. The agent records an
Event only when something changes, and the apiserver keeps Events for an
hour by default.`,
		Example: `  # What happened to web in prod lately
  gitsync events web -n prod`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeGitSyncs(kube),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Out, o.ErrOut, o.Name = cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0]
			if err := validateOutput(o.Output, outputText, outputJSON, outputYAML); err != nil {
				return withExitCode(exitError, err)
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml (the Event objects).")
	return cmd
}

// Run lists the GitSync's Events.
func (o *eventsOptions) Run(ctx context.Context) error {
	tgt, gs, err := connectGitSync(ctx, &o.Target, o.Name)
	if err != nil {
		return err
	}
	key := client.ObjectKeyFromObject(gs)
	list := &corev1.EventList{}
	sel := fields.SelectorFromSet(fields.Set{"involvedObject.kind": "GitSync", "involvedObject.name": o.Name})
	if err := tgt.Client.List(ctx, list, client.InNamespace(key.Namespace), client.MatchingFieldsSelector{Selector: sel}); err != nil {
		return withExitCode(exitError, fmt.Errorf("events of GitSync/%s/%s: %w", key.Namespace, key.Name, err))
	}
	slices.SortStableFunc(list.Items, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	switch o.Output {
	case outputJSON, outputYAML:
		for i := range list.Items {
			list.Items[i].APIVersion, list.Items[i].Kind = "v1", "Event"
			list.Items[i].ManagedFields = nil
		}
		list.APIVersion, list.Kind = "v1", "EventList"
		return writeStructured(o.Out, o.Output, list)
	}
	if len(list.Items) == 0 {
		fmt.Fprintf(o.ErrOut, "No events for GitSync/%s/%s.\n", key.Namespace, key.Name)
		return nil
	}
	w := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "LAST SEEN\tTYPE\tREASON\tMESSAGE")
	for _, e := range list.Items {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", duration.HumanDuration(o.now().Sub(eventTime(e))), e.Type, e.Reason, e.Message)
	}
	return w.Flush()
}

// eventTime is when an Event last happened, whichever API recorded it.
func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
