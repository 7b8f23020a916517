package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/drift"
	"gitsync.dev/gitsync/inventory"
)

// diffOptions are the inputs of gitsync diff.
type diffOptions struct {
	Source sourceOptions
	Target targetOptions
	Prune  pruneFlags
	// Prepare substitutes variables and decrypts SOPS files as a GitSync would.
	Prepare prepareFlags
	// Drift are the fields left alone (--ignore-field; with --gitsync, added
	// to its spec.drift.ignore).
	Drift driftFlags
	// Name selects the sync whose inventory previews prunes and whose owner
	// labels the objects carry; empty means no prunes are shown and objects
	// keep whatever owner labels they carry (as apply without --name does).
	Name string
	// GitSync ("NAMESPACE/NAME") previews what the agent would do for that
	// GitSync: its path, target namespace, identity, owner and prunes.
	GitSync string
	// Output is "" (text), "json" or "yaml".
	Output string
	// Verbose also lists unchanged objects and prunes that are held back.
	Verbose bool
	// Watch re-runs the diff whenever a file under the local directory changes.
	Watch bool
	// Force previews an apply --force: fields of other managers taken, objects
	// whose immutable fields changed recreated.
	Force bool

	Out, ErrOut io.Writer
}

// newDiffCmd returns the diff command.
func newDiffCmd(kube *genericclioptions.ConfigFlags) *cobra.Command {
	o := &diffOptions{}
	o.Target.Flags = kube
	cmd := &cobra.Command{
		Use:   "diff [DIR]",
		Short: "Show what applying a directory or repository would change in the cluster",
		Long: `Show what applying a directory or repository would change in the cluster.

The desired objects are rendered exactly as the agent renders them (plain YAML
or kustomize) and compared with the live objects by a server-side apply dry
run, so defaulting, admission and field ownership are accounted for. Nothing
is written. Without --name, objects keep the owner labels a sync gave them.

Each object that would change is printed as
  + Kind/namespace/name (create)
  ~ Kind/namespace/name (configure)    followed by a unified YAML diff
  - Kind/namespace/name (prune)        only with --name
  ! Kind/namespace/name (would fail: reason)
An object fails when the apiserver refuses its dry run (an invalid value, an
immutable field, a field another manager owns): apply would fail the same way.
Unchanged objects are listed with -v. Secret values are always masked.

A local directory is read as it is on disk, uncommitted files included. With
--url the repository is fetched at --branch (default: its default branch), --tag, --semver
or --commit.

Credentials for --url come from $GITSYNC_GIT_USERNAME and $GITSYNC_GIT_PASSWORD
(or $GITSYNC_GIT_TOKEN) and the --ssh-key, --known-hosts and --ca-file files.

Exit status: 0 in sync, 1 differences found, 2 error (including an object that
would fail).`,
		Example: `  # Compare ./deploy, as it is on disk, with the cluster
  gitsync diff ./deploy

  # Include prunes: objects applied earlier by "gitsync apply --name web" that left ./deploy
  gitsync diff ./deploy --name web -n prod

  # Compare a tag of a remote repository, machine-readable
  gitsync diff --url https://github.com/example/app --tag v1.4.0 --path deploy -o json

  # Re-run the diff whenever a file under ./deploy changes
  gitsync diff --watch ./deploy`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Out, o.ErrOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := o.Complete(args); err != nil {
				return withExitCode(exitError, err)
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withExitCode(exitError, err) })
	o.Source.AddFlags(cmd.Flags())
	o.Prepare.AddFlags(cmd.Flags())
	o.Prune.AddFlags(cmd.Flags())
	o.Drift.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.Name, "name", "", "Name of the sync whose inventory (from \"gitsync apply --name\") previews prunes.")
	cmd.Flags().StringVar(&o.GitSync, "gitsync", "", "Preview what the agent would do for the GitSync NAMESPACE/NAME: its path, targetNamespace, ServiceAccount and prunes; DIR is a checkout of its repository (default: its source at its spec).")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml prints a list of {subject, action, diff}.")
	_ = cmd.RegisterFlagCompletionFunc("gitsync", func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return gitSyncNames(cmd.Context(), kube, toComplete, true), cobra.ShellCompDirectiveNoFileComp
	})
	cmd.Flags().BoolVarP(&o.Verbose, "verbose", "v", false, "Also list unchanged objects and prunes that would be held back.")
	cmd.Flags().BoolVar(&o.Force, "force", false, "Preview an apply --force: take fields owned by other managers, recreate objects whose immutable fields changed.")
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "Re-run the diff whenever a file under the directory changes (local directories only).")
	return cmd
}

// Complete validates the flags and takes the directory argument.
func (o *diffOptions) Complete(args []string) error {
	if err := o.validateGitSync(); err != nil {
		return err
	}
	if o.GitSync != "" {
		if err := o.Source.CompleteOptional(args); err != nil {
			return err
		}
	} else if err := o.Source.Complete(args); err != nil {
		return err
	}
	if _, err := o.Drift.rules(); err != nil {
		return err
	}
	o.Source.Rendering.useTarget(o.Name, &o.Target) // chart release defaults
	if err := validateOutput(o.Output, outputText, outputJSON, outputYAML); err != nil {
		return err
	}
	if o.Watch && o.Source.URL != "" {
		return errors.New("--watch needs a local directory, not --url")
	}
	return o.Prune.Validate()
}

// Run renders the source, diffs it against the cluster and prints the
// result. The returned error carries the exit status: nil in sync, 1 with
// differences, 2 on error.
func (o *diffOptions) Run(ctx context.Context) error {
	if o.GitSync != "" {
		return o.runGitSync(ctx)
	}
	if o.Watch {
		tgt, err := o.Target.Connect()
		if err != nil {
			return withExitCode(exitError, err)
		}
		return o.watch(ctx, tgt)
	}
	desired, err := o.Prepare.render(ctx, &o.Source) // before connecting: a broken manifest needs no cluster to be reported
	if err != nil {
		return withExitCode(exitError, err)
	}
	tgt, err := o.Target.Connect()
	if err != nil {
		return withExitCode(exitError, err)
	}
	return o.diff(ctx, tgt, desired)
}

// runOnce does one render, diff and print.
func (o *diffOptions) runOnce(ctx context.Context, tgt *connectedCluster) error {
	desired, err := o.Prepare.render(ctx, &o.Source)
	if err != nil {
		return withExitCode(exitError, err)
	}
	return o.diff(ctx, tgt, desired)
}

// diff compares desired with the cluster and prints the result.
func (o *diffOptions) diff(ctx context.Context, tgt *connectedCluster, desired *renderedSource) error {
	rules, err := o.Drift.rules()
	if err != nil {
		return withExitCode(exitError, err)
	}
	desired.Ignore = rules
	rep, err := computeDiff(ctx, tgt, desired, diffRequest{Name: o.Name, Force: o.Force, PreviewPrune: o.Name != "", Prune: o.Prune})
	if err != nil {
		return withExitCode(exitError, err)
	}
	return o.finish(rep)
}

// finish prints rep and returns the exit status it calls for.
func (o *diffOptions) finish(rep *diffReport) error {
	if err := o.print(rep); err != nil {
		return withExitCode(exitError, err)
	}
	for _, w := range rep.Warnings {
		fmt.Fprintln(o.ErrOut, "warning:", w)
	}
	if errs := rep.Errors(); errs != nil {
		return withExitCode(exitError, errs)
	}
	if rep.Differs() {
		return &exitErr{Code: exitDifferences}
	}
	return nil
}

// Diff actions, as printed and in JSON.
const (
	actionCreate    = "create"
	actionConfigure = "configure"
	actionPrune     = "prune"
	actionUnchanged = "unchanged"
	actionKept      = "kept"
	actionFailed    = "failed"
	// actionIgnored: gitsync.dev/apply: disabled, never written.
	actionIgnored = "ignored"
	// actionDrifted: differs from Git, left by spec.drift.mode Detect.
	actionDrifted = "drifted"
)

// Reasons shown under a configure that has no diff.
const (
	// recreateReason: an immutable field changed and the object opted in to
	// recreation (or --force): the server cannot show the result.
	recreateReason = "would be deleted and created again: an immutable field changed; no diff shown"
	// noDiffReason: any other configure the dry run could not show.
	noDiffReason = "no diff: the server could not show the result of this change"
)

// diffEntry is one object of a diff report; its JSON form is the -o json item.
type diffEntry struct {
	Subject string `json:"subject"`
	Action  string `json:"action"`
	Diff    string `json:"diff,omitempty"`
	// Reason explains kept and failed entries (without the subject), and a
	// configure without a diff.
	Reason string `json:"reason,omitempty"`
	// Skipped explains each field of Git an ignore rule left out of the
	// diff, e.g. "/spec/replicas: left alone by spec.drift.ignore[0]
	// (left to its owner; Git's value differs)".
	Skipped []string `json:"skipped,omitempty"`
	err     error
}

// explains reports whether e says why a difference is not shown: an object
// left alone by its annotation, or a field of Git an ignore rule skipped
// whose value differs. Such entries are listed without --verbose.
func (e diffEntry) explains() bool {
	return e.Action == actionIgnored || (e.Action == actionUnchanged && e.Reason != "") || len(e.Skipped) > 0
}

// diffReport is what a diff found.
type diffReport struct {
	Entries []diffEntry
	// Warnings are shown but do not make the diff fail (a prune preview the
	// safety rails refuse).
	Warnings []string
}

// Differs reports whether anything would be created, configured or pruned.
func (r *diffReport) Differs() bool {
	for _, e := range r.Entries {
		switch e.Action {
		case actionCreate, actionConfigure, actionPrune, actionDrifted:
			return true
		}
	}
	return false
}

// Errors joins the errors of failed entries.
func (r *diffReport) Errors() error {
	var errs []error
	for _, e := range r.Entries {
		if e.Action == actionFailed {
			errs = append(errs, e.err)
		}
	}
	return listed(errors.Join(errs...), "would fail")
}

// diffRequest says what computeDiff compares.
type diffRequest struct {
	// Name is the sync: owner labels are part of the desired objects.
	Name string
	// Force previews an apply --force: fields of other managers are taken.
	Force bool
	// PreviewPrune adds the prunes of Name's inventory.
	PreviewPrune bool
	Prune        pruneFlags
}

// computeDiff runs the engine's applier as a dry run (the same code path as a
// real apply, so the verdicts match) and, when asked, the prune planner
// against the stored inventory.
func computeDiff(ctx context.Context, tgt *connectedCluster, desired *renderedSource, req diffRequest) (*diffReport, error) {
	var store inventory.Store
	if req.Name != "" {
		store = inventory.NewConfigMapStore(tgt.Client, tgt.Namespace, req.Name)
	}
	recorded, err := loadInventory(ctx, store)
	if err != nil {
		return nil, err
	}
	a, err := newApplier(tgt, req.Name, recorded, applierFlags{DryRun: true, Force: req.Force, Desired: desired.Objects, Ignore: desired.Ignore})
	if err != nil {
		return nil, err
	}
	cs, err := a.Apply(ctx, desired.Objects)
	if err != nil {
		return nil, err
	}
	rep := &diffReport{}
	for _, e := range cs.Entries {
		rep.Entries = append(rep.Entries, diffEntryOf(e))
	}
	if req.Name == "" || !req.PreviewPrune {
		return rep, nil
	}
	if err := rep.previewPrune(ctx, tgt.Client, recorded, cs, req.Prune.options(tgt, req.Name)); err != nil {
		return nil, err
	}
	return rep, nil
}

// diffEntryOf turns a dry-run change set entry into a diff entry.
func diffEntryOf(e apply.Entry) diffEntry {
	d := diffEntry{Subject: e.Subject, Diff: e.Diff, err: e.Err, Skipped: skipNotes(e.Skips)}
	switch e.Action {
	case apply.Created:
		d.Action = actionCreate
	case apply.Configured:
		d.Action = actionConfigure
		switch {
		case e.Recreated:
			d.Reason = recreateReason
		case e.Diff == "":
			d.Reason = noDiffReason
		}
	case apply.Unchanged:
		d.Action, d.Reason = actionUnchanged, e.Reason
	case apply.Ignored:
		d.Action, d.Reason = actionIgnored, e.Reason
	case apply.Drifted:
		d.Action, d.Reason = actionDrifted, strings.Join(e.Fields, ", ")
		if e.Reason != "" {
			d.Reason = e.Reason
		}
	default: // failed (the server refused the dry run), or skipped (kind not served, CRD failed)
		d.Action = actionFailed
		if e.Err == nil {
			d.err = fmt.Errorf("%s %s", e.Subject, e.Action)
		}
		d.Reason = strings.TrimPrefix(d.err.Error(), e.Subject+" ")
	}
	return d
}

// skipNotes explains the skipped fields whose Git value differs from the
// live one (the others would show nothing anyway), or, for an object being
// created, every skipped field (its Git value is set).
func skipNotes(skips []drift.Skip) []string {
	var out []string
	for _, s := range skips {
		if s.Differs {
			out = append(out, s.String())
		}
	}
	return out
}

// previewPrune adds to the report, without deleting, the prune an apply with
// --prune would do: the stored inventory minus the desired objects, through
// every safety rail of opts (opts.SyncSucceeded is set from cs). A refusal
// by the rails is a warning: nothing would be pruned.
func (rep *diffReport) previewPrune(ctx context.Context, c client.Reader, old *inventory.Inventory, cs *apply.ChangeSet, opts inventory.PruneOptions) error {
	opts.SyncSucceeded = cs.Err() == nil
	plan, err := inventory.Plan(ctx, c, old, desiredInventory(cs), opts)
	var refused *inventory.RefusedError
	if errors.As(err, &refused) {
		rep.Warnings = append(rep.Warnings, "nothing would be pruned: "+refused.Error())
		return nil
	}
	if err != nil {
		return err
	}
	for _, d := range plan.Deletions {
		rep.Entries = append(rep.Entries, diffEntry{Subject: d.ID.String(), Action: actionPrune})
	}
	var warnings []string
	for _, s := range plan.Skipped {
		switch s.Action {
		case inventory.ActionKept:
			rep.Entries = append(rep.Entries, diffEntry{Subject: s.ID.String(), Action: actionKept, Reason: s.Reason})
		case inventory.ActionFailed:
			rep.Entries = append(rep.Entries, diffEntry{Subject: s.ID.String(), Action: actionFailed, Reason: s.Reason, err: s.Err})
		case inventory.ActionUnknown:
			warnings = append(warnings, fmt.Sprintf("%s would not be pruned: %s", s.ID, s.Reason))
		}
	}
	if len(warnings) > 0 {
		rep.Warnings = append(rep.Warnings, strings.Join(warnings, "\n"))
	}
	return nil
}

// desiredInventory is the set of objects the change set covers, whatever
// happened to them: an object still in Git is never stale.
func desiredInventory(cs *apply.ChangeSet) *inventory.Inventory {
	entries := make([]inventory.Entry, 0, len(cs.Entries))
	for _, e := range cs.Entries {
		entries = append(entries, inventory.Entry{ID: e.ID, UID: e.UID})
	}
	return inventory.New(entries...)
}

// print writes the report as text or JSON.
func (o *diffOptions) print(rep *diffReport) error {
	shown := make([]diffEntry, 0, len(rep.Entries))
	for _, e := range rep.Entries {
		if (e.Action == actionUnchanged || e.Action == actionKept) && !o.Verbose && !e.explains() {
			continue
		}
		shown = append(shown, e)
	}
	if o.Output != outputText {
		return writeStructured(o.Out, o.Output, shown)
	}
	p := newPrinter(o.Out)
	for _, e := range shown {
		printDiffEntry(p, e, o.Verbose)
	}
	p.Printf("%s\n", diffSummary(rep))
	return nil
}

func printDiffEntry(p *printer, e diffEntry, verbose bool) {
	switch e.Action {
	case actionCreate:
		p.Printf("%s\n", p.paint(colourGreen, "+ "+e.Subject+" (create)"))
		if verbose && e.Diff != "" {
			p.Diff(e.Diff)
		}
	case actionConfigure:
		p.Printf("%s\n", p.paint(colourYellow, "~ "+e.Subject+" (configure)"))
		if e.Reason != "" {
			p.Printf("    (%s)\n", e.Reason)
		}
		p.Diff(e.Diff)
	case actionPrune:
		p.Printf("%s\n", p.paint(colourRed, "- "+e.Subject+" (prune)"))
	case actionUnchanged:
		if e.Reason != "" {
			p.Printf("  %s (unchanged: %s)\n", e.Subject, e.Reason)
		} else {
			p.Printf("  %s (unchanged)\n", e.Subject)
		}
	case actionIgnored:
		p.Printf("  %s (ignored: %s)\n", e.Subject, e.Reason)
	case actionDrifted:
		p.Printf("%s\n", p.paint(colourYellow, "~ "+e.Subject+" (drifted, left: "+e.Reason+")"))
	case actionKept:
		p.Printf("  %s (kept: %s)\n", e.Subject, e.Reason)
	case actionFailed:
		reason := e.Reason
		if reason == "" {
			reason = "failed"
		}
		p.Printf("%s\n", p.paint(colourRed, "! "+e.Subject+" ("+reason+")"))
	}
	for _, s := range e.Skipped {
		p.Printf("    # %s\n", s)
	}
}

// diffSummary is the closing line, e.g. "1 to create, 2 to configure, 3 unchanged".
func diffSummary(rep *diffReport) string {
	counts := map[string]int{}
	for _, e := range rep.Entries {
		counts[e.Action]++
	}
	var parts []string
	for _, a := range []struct{ action, word string }{
		{actionCreate, "to create"}, {actionConfigure, "to configure"}, {actionPrune, "to prune"},
		{actionUnchanged, "unchanged"}, {actionKept, "kept"}, {actionIgnored, "ignored"}, {actionDrifted, "drifted"}, {actionFailed, "failed"},
	} {
		if counts[a.action] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[a.action], a.word))
		}
	}
	if len(parts) == 0 {
		return "No objects."
	}
	s := strings.Join(parts, ", ")
	if !rep.Differs() && counts[actionFailed] == 0 {
		return "In sync: " + s + "."
	}
	return "Differences: " + s + "."
}
