package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/object"
	sourcegit "gitsync.dev/gitsync/source/git"
)

// traceOptions are the inputs of gitsync trace.
type traceOptions struct {
	Target targetOptions
	// Source holds the ref and render flags the GitSync's render is made with.
	Source sourceOptions
	// Kind and Name are the object asked about: KIND[.GROUP]/NAME.
	Kind, Name string
	// Output is "" (text) or "json".
	Output string

	Out io.Writer
	now func() time.Time
}

// traced is what gitsync trace says about one object.
type traced struct {
	Object string `json:"object"`
	// Manager is "gitsync" (a GitSync's), "cli" (gitsync apply --name) or ""
	// (not gitsync's).
	Manager string `json:"manager,omitempty"`
	GitSync string `json:"gitsync,omitempty"`
	// InInventory says the GitSync's inventory lists the object with this UID.
	InInventory bool   `json:"inInventory"`
	Revision    string `json:"revision,omitempty"`
	AppliedAt   string `json:"appliedAt,omitempty"`
	Source      string `json:"source,omitempty"`
	// File is where the revision defines the object; empty when it does not.
	File string `json:"file,omitempty"`
	// Note says what could not be found out, or why.
	Note string `json:"note,omitempty"`
}

// note adds what could not be found out to t's Note.
func (t *traced) note(s string) {
	if t.Note != "" {
		t.Note += "; "
	}
	t.Note += s
}

// newTraceCmd returns the trace command.
func newTraceCmd(kube *genericclioptions.ConfigFlags) *cobra.Command {
	o := &traceOptions{Target: targetOptions{Flags: kube}, now: time.Now}
	// The render flags' defaults, none of them offered: the render is the
	// GitSync's own, at its applied revision.
	o.Source.AddFlags(pflag.NewFlagSet("trace-render", pflag.ContinueOnError))
	o.Source.Rendering.useTarget("", &o.Target) // a chart sees the cluster's capabilities
	cmd := &cobra.Command{
		Use:   "trace KIND/NAME",
		Short: "Say which GitSync manages an object, from which revision and file",
		Long: `Say which GitSync manages an object of the cluster (its owner labels),
whether that GitSync's inventory lists it, the revision it last applied and
when, and the file of that revision that defines the object: the GitSync's
source is fetched at that commit and rendered as the agent renders it, and
the object is looked up among the results (a file and document of a plain
directory, a chart's template, or a kustomization's directory).

KIND is a kind or resource name, with its group when ambiguous
(deployment, deployments.apps, Deployment.apps); -n gives the namespace.
Secrets' values are never printed.

Exit status: 0 the object is a GitSync's, 1 it is not managed by a GitSync
(not labelled, or labelled by gitsync apply --name), 2 error.`,
		Example: `  # Where the Deployment web in prod comes from
  gitsync trace deployment/web -n prod

  # A cluster-scoped object, machine-readable
  gitsync trace clusterrole/web-reader -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Out = cmd.OutOrStdout()
			kind, name, ok := strings.Cut(args[0], "/")
			if !ok || kind == "" || name == "" || strings.Contains(name, "/") {
				return withExitCode(exitError, fmt.Errorf("%q: want KIND/NAME, e.g. deployment/web", args[0]))
			}
			o.Kind, o.Name = kind, name
			if err := validateOutput(o.Output, outputText, outputJSON); err != nil {
				return withExitCode(exitError, err)
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withExitCode(exitError, err) })
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json.")
	return cmd
}

// Run finds the object, its GitSync and the file it comes from.
func (o *traceOptions) Run(ctx context.Context) error {
	user, err := o.Target.Connect()
	if err != nil {
		return withExitCode(exitError, err)
	}
	obj, err := o.get(ctx, user)
	if err != nil {
		return withExitCode(exitError, err)
	}
	t := o.trace(ctx, user, obj)
	if err := o.print(t); err != nil {
		return withExitCode(exitError, err)
	}
	if t.Manager != "gitsync" {
		return &exitErr{Code: exitFailure} // the answer is printed
	}
	return nil
}

// get reads the object KIND/NAME, in the target namespace when namespaced.
func (o *traceOptions) get(ctx context.Context, user *connectedCluster) (*unstructured.Unstructured, error) {
	gvr := schema.ParseGroupResource(strings.ToLower(o.Kind)).WithVersion("")
	// Short names (cm, deploy) as kubectl reads them.
	mapper := restmapper.NewShortcutExpander(user.Mapper, user.Discovery, func(string) {})
	gvk, err := mapper.KindFor(gvr)
	if err != nil {
		return nil, fmt.Errorf("kind %q: %w", o.Kind, err)
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("kind %q: %w", o.Kind, err)
	}
	key := client.ObjectKey{Name: o.Name}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		key.Namespace = user.Namespace
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := user.Client.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			obj.SetNamespace(key.Namespace)
			obj.SetName(key.Name)
			return nil, fmt.Errorf("%s not found", object.IDOf(obj))
		}
		return nil, fmt.Errorf("read %s/%s: %w", gvk.Kind, o.Name, err)
	}
	return obj, nil
}

// trace answers for obj: whose it is, and where its GitSync's applied
// revision defines it.
func (o *traceOptions) trace(ctx context.Context, user *connectedCluster, obj *unstructured.Unstructured) traced {
	id := object.IDOf(obj)
	t := traced{Object: id.String()}
	owner, ok := object.OwnerOf(obj.GetLabels())
	switch {
	case !ok:
		t.Note = "not managed by gitsync: it carries no gitsync.dev owner labels"
		return t
	case owner.CLI:
		t.Manager = "cli"
		t.Note = fmt.Sprintf("applied from a laptop or CI by gitsync apply --name %s -n %s, not by a GitSync", owner.Name, owner.Namespace)
		return t
	}
	t.Manager, t.GitSync = "gitsync", owner.Namespace+"/"+owner.Name
	gs, err := getGitSync(ctx, user.Client, client.ObjectKey{Namespace: owner.Namespace, Name: owner.Name})
	if err != nil {
		t.Note = err.Error() + " (its owner labels name it)"
		return t
	}
	if inv, err := inventory.FromGitSyncStatus(gs); err == nil {
		t.InInventory = inv.Has(id) && inv.UID(id) == obj.GetUID()
	}
	t.Revision = gs.Status.LastAppliedRevision
	if at := gs.Status.LastAppliedTime; at != nil {
		t.AppliedAt = at.UTC().Format(time.RFC3339)
	}
	t.Source = sourcegit.RedactURL(gs.Spec.Source.URL)
	if p := gs.Spec.Source.Path; p != "" {
		t.Source += " path " + p
	}
	if !t.InInventory {
		t.note("the GitSync's inventory does not list this object (with this UID): it is not pruned by it")
	}
	if t.Revision == "" {
		t.note("the GitSync has applied no revision yet")
		return t
	}
	file, err := o.fileOf(ctx, user, gs, id)
	switch {
	case err != nil:
		t.note("its revision could not be rendered: " + err.Error())
	case file == "":
		t.note("its applied revision does not define this object (it left Git; a sync with spec.prune deletes it)")
	default:
		t.File = file
	}
	return t
}

// fileOf renders gs's source at its applied revision, as the agent does,
// and says where the object id is defined; "" when it is not.
func (o *traceOptions) fileOf(ctx context.Context, user *connectedCluster, gs *gitsyncv1.GitSync, id object.ID) (string, error) {
	src := o.Source
	src.Origins = true
	if rev, ok := sourcegit.ParseRevision(gs.Status.LastAppliedRevision); ok && rev.Commit != "" && rev.Chart == "" {
		src.Commit = rev.Commit // what was applied, not what the ref names now
	}
	p, err := previewOf(user, gs)
	if err != nil {
		return "", err
	}
	// Substituted as the agent does: a variable may be in a name.
	desired, err := p.desired(ctx, user, &src, &prepareFlags{})
	if err != nil {
		return "", err
	}
	a, err := p.applier(desired.Objects, nil) // placed as the agent places them
	if err != nil {
		return "", err
	}
	placed := a.Prepared(desired.Objects)
	if len(placed) != len(desired.Origins) {
		return "", errors.New("the render did not say where its objects come from")
	}
	for i, obj := range placed {
		if object.IDOf(obj) == id {
			return desired.Origins[i], nil
		}
	}
	return "", nil
}

// print writes t as text or JSON.
func (o *traceOptions) print(t traced) error {
	if o.Output == outputJSON {
		return writeJSON(o.Out, t)
	}
	w := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, t.Object)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "  %s\t%s\n", k, v)
		}
	}
	if t.GitSync != "" {
		inv := "listed in its inventory"
		if !t.InInventory {
			inv = "not in its inventory"
		}
		row("GitSync", t.GitSync+" ("+inv+")")
	}
	rev := t.Revision
	if at, err := time.Parse(time.RFC3339, t.AppliedAt); err == nil && rev != "" {
		rev += fmt.Sprintf(" (applied %s ago)", o.now().Sub(at).Round(time.Second))
	}
	row("revision", rev)
	row("source", t.Source)
	row("file", t.File)
	row("note", t.Note)
	return w.Flush()
}
