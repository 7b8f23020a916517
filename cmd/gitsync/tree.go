package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/health"
	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/object"
)

// treeOptions are the inputs of gitsync tree.
type treeOptions struct {
	Target targetOptions
	// Name is the GitSync, in the target namespace.
	Name string
	// Output is "" (table), "json" or "yaml".
	Output string
	// HealthRules add to the GitSync's spec.healthChecks (which win),
	// standing in for the agent's --health-rules.
	HealthRules healthRuleFlags

	Out io.Writer
}

// treeEntry is one object of a GitSync's inventory with its health.
type treeEntry struct {
	Subject string `json:"subject"`
	// Status is the kstatus status: Current, InProgress, Failed,
	// Terminating, NotFound or Unknown.
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
	// Pending marks an object recorded before it was applied (a sync in
	// progress or interrupted).
	Pending bool `json:"pending,omitempty"`
}

// newTreeCmd returns the tree command.
func newTreeCmd(kube *genericclioptions.ConfigFlags) *cobra.Command {
	o := &treeOptions{Target: targetOptions{Flags: kube}}
	cmd := &cobra.Command{
		Use:   "tree NAME",
		Short: "List the objects a GitSync manages, with their health",
		Long: `List the objects a GitSync manages (its status inventory), each with its
health as the agent's wait judges it (kstatus: Current, InProgress, Failed,
Terminating, NotFound, Unknown) and kstatus' message. Kinds named by the
GitSync's spec.healthChecks, or by --health-rules files (the agent's
--health-rules, say), are judged by those CEL rules instead; the GitSync's
rule wins for the same kind. An object a rule fails to evaluate on is
Unknown, with the rule's error.`,
		Example: `  # What web in prod manages, and whether each object is ready
  gitsync tree web -n prod

  # The same, machine-readable
  gitsync tree web -n prod -o json

  # Judge cert-manager Certificates as the agent's rules do
  gitsync tree web -n prod --health-rules examples/health-rules/cert-manager.yaml`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeGitSyncs(kube),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Out, o.Name = cmd.OutOrStdout(), args[0]
			if err := validateOutput(o.Output, outputText, outputJSON, outputYAML); err != nil {
				return withExitCode(exitError, err)
			}
			if err := o.HealthRules.Load(); err != nil {
				return withExitCode(exitError, err)
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml.")
	o.HealthRules.AddFlags(cmd.Flags(), "the GitSync's objects, under its own spec.healthChecks")
	return cmd
}

// Run reads the inventory and the health of each object.
func (o *treeOptions) Run(ctx context.Context) error {
	tgt, gs, err := connectGitSync(ctx, &o.Target, o.Name)
	if err != nil {
		return err
	}
	_, entries, err := inventoryHealth(ctx, tgt, gs, &o.HealthRules)
	if err != nil {
		return withExitCode(exitError, err)
	}
	if o.Output != outputText {
		return writeStructured(o.Out, o.Output, entries)
	}
	fmt.Fprintf(o.Out, "GitSync/%s/%s at %s\n", gs.Namespace, gs.Name, orNone(gs.Status.LastAppliedRevision))
	w := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "OBJECT\tSTATUS\tMESSAGE")
	for _, e := range entries {
		status := e.Status
		if e.Pending {
			status += " (pending)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", e.Subject, status, e.Message)
	}
	return w.Flush()
}

// inventoryHealth reads each object of gs's inventory and judges its
// health by gs's spec.healthChecks over extra's rules: what gitsync tree
// prints and the web view shows, entry by entry.
func inventoryHealth(ctx context.Context, tgt *connectedCluster, gs *gitsyncv1.GitSync, extra *healthRuleFlags) ([]inventory.Entry, []treeEntry, error) {
	inv, err := inventory.FromGitSyncStatus(gs)
	if err != nil {
		return nil, nil, err
	}
	hr, err := extra.Rules(gs.Spec.HealthChecks)
	if err != nil {
		return nil, nil, fmt.Errorf("GitSync/%s/%s spec.healthChecks: %w", gs.Namespace, gs.Name, err)
	}
	live := treeReader(tgt, inv)
	entries := make([]treeEntry, 0, inv.Len())
	for _, e := range inv.Entries {
		entries = append(entries, treeEntryOf(ctx, tgt, live, e, hr))
	}
	return inv.Entries, entries, nil
}

// treeEntryOf reads one inventory object and checks its health. A read
// that fails is Unknown with the reason; the object may belong to a kind
// no longer served.
func treeEntryOf(ctx context.Context, tgt *connectedCluster, live client.Reader, e inventory.Entry, hr health.Rules) treeEntry {
	te := treeEntry{Subject: e.ID.String(), Pending: e.Pending}
	gvk, err := entryGVK(tgt, e)
	if err != nil {
		te.Status, te.Message = string(health.Unknown), err.Error()
		return te
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	err = live.Get(ctx, client.ObjectKey{Namespace: e.ID.Namespace, Name: e.ID.Name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		te.Status = string(health.NotFound)
		return te
	case err != nil:
		te.Status, te.Message = string(health.Unknown), err.Error()
		return te
	}
	res, err := health.CheckWith(ctx, obj, hr)
	te.Status, te.Message = string(res.Status), res.Message
	if err != nil {
		te.Message = err.Error()
	}
	return te
}

// entryGVK is the kind of an inventory entry at its recorded version, else
// the one the cluster prefers.
func entryGVK(tgt *connectedCluster, e inventory.Entry) (schema.GroupVersionKind, error) {
	if e.Version != "" {
		return schema.GroupVersionKind{Group: e.ID.Group, Version: e.Version, Kind: e.ID.Kind}, nil
	}
	m, err := tgt.Mapper.RESTMapping(e.ID.GroupKind())
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return m.GroupVersionKind, nil
}

// treeReader reads the inventory's objects as a cold apply reads its
// desired ones: one LIST per (kind, namespace) of several objects.
func treeReader(tgt *connectedCluster, inv *inventory.Inventory) client.Reader {
	stubs := make([]*unstructured.Unstructured, 0, inv.Len())
	ids := make([]object.ID, 0, inv.Len())
	for _, e := range inv.Entries {
		gvk, err := entryGVK(tgt, e)
		if err != nil {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		stubs, ids = append(stubs, u), append(ids, e.ID)
	}
	live := newListedReader(tgt.Client)
	live.expect(stubs, ids)
	return live
}

func orNone(s string) string {
	if s == "" {
		return "(nothing applied yet)"
	}
	return s
}
