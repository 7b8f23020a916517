package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/drift"
	"gitsync.dev/gitsync/engine"
	"gitsync.dev/gitsync/health"
	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/object"
)

// applyOptions are the inputs of gitsync apply.
type applyOptions struct {
	Source sourceOptions
	Target targetOptions
	Prune  pruneFlags
	// Prepare substitutes variables and decrypts SOPS files as a GitSync would.
	Prepare prepareFlags
	// Drift are the fields left alone (--ignore-field).
	Drift driftFlags
	// Name is the sync whose inventory records what was applied (and, with
	// Prune, what may be pruned) and whose owner labels the objects get;
	// empty means no inventory, and objects keep the owner labels they carry.
	Name string
	// Force takes fields other managers own and recreates objects whose
	// immutable fields changed.
	Force bool
	// PruneEnabled deletes objects of the inventory that left the source.
	PruneEnabled bool
	// Wait waits for the applied objects to become ready, up to Timeout.
	Wait    bool
	Timeout time.Duration
	// HealthRules judge the kinds they name while waiting.
	HealthRules healthRuleFlags
	// DryRun prints what would change, as gitsync diff does, and writes nothing.
	DryRun bool
	// Output is "" (lines for people), "json" or "yaml" (one list at the end).
	Output string

	Out, ErrOut io.Writer
}

// newApplyCmd returns the apply command.
func newApplyCmd(kube *genericclioptions.ConfigFlags) *cobra.Command {
	o := &applyOptions{}
	o.Target.Flags = kube
	cmd := &cobra.Command{
		Use:   "apply [DIR]",
		Short: "Apply a directory or repository to the cluster",
		Long: `Apply a directory or repository to the cluster with the agent's engine.

Objects are applied with server-side apply (field manager "gitsync") in
stages: CRDs, Namespaces and cluster-wide classes first, then everything else
in parallel. Fields changed by hand with kubectl are taken back; fields owned
by other controllers are reported as conflicts and left alone unless --force.

With --name the applied objects carry owner labels and are recorded in an
inventory (ConfigMap gitsync-inventory-NAME in the namespace). Without it,
objects keep the owner labels they carry: ownership never changes. With --prune,
objects of that inventory that left the source are deleted, but only after
every object applied successfully, only if they still carry the owner labels
and the recorded UID, and never more than --prune-max-share of them at once.

Credentials for --url come from $GITSYNC_GIT_USERNAME and $GITSYNC_GIT_PASSWORD
(or $GITSYNC_GIT_TOKEN) and the --ssh-key, --known-hosts and --ca-file files.

Exit status: 0 success, 1 some object failed (or the wait or prune failed),
2 the source or flags are invalid or the cluster cannot be reached.`,
		Example: `  # Apply ./deploy to the namespace of the current context
  gitsync apply ./deploy

  # Apply, record the inventory "web", prune what left ./deploy and wait until ready
  gitsync apply ./deploy --name web -n prod --prune --wait --timeout 5m

  # Show what would change without writing anything
  gitsync apply ./deploy --name web --prune --dry-run

  # Apply a tag of a remote repository
  gitsync apply --url https://github.com/example/app --tag v1.4.0 --path deploy`,
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
	o.Drift.AddFlags(cmd.Flags())
	o.Prune.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.Name, "name", "", "Name of the sync: stamps owner labels and records the inventory used by --prune.")
	cmd.Flags().BoolVar(&o.Force, "force", false, "Take fields owned by other managers and recreate objects whose immutable fields changed.")
	cmd.Flags().BoolVar(&o.PruneEnabled, "prune", false, "Delete objects of the --name inventory that are no longer in the source.")
	cmd.Flags().BoolVar(&o.Wait, "wait", false, "Wait until the applied objects are ready.")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 5*time.Minute, "How long --wait waits before failing.")
	o.HealthRules.AddFlags(cmd.Flags(), "what --wait waits for")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "Print what would change (like gitsync diff) and write nothing.")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml prints one list of {subject, action, ...} when done (with --dry-run, as gitsync diff -o does).")
	return cmd
}

// Complete validates the flags and takes the directory argument.
func (o *applyOptions) Complete(args []string) error {
	if err := o.Source.Complete(args); err != nil {
		return err
	}
	o.Source.Rendering.useTarget(o.Name, &o.Target) // chart release defaults
	if o.PruneEnabled && o.Name == "" {
		return errors.New("--prune needs --name: only objects recorded in a named inventory are ever pruned")
	}
	if o.Timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	if err := validateOutput(o.Output, outputText, outputJSON, outputYAML); err != nil {
		return err
	}
	if err := o.HealthRules.Load(); err != nil {
		return err
	}
	return o.Prune.Validate()
}

// Run renders, applies, prunes and waits, printing one line per object and a
// summary. The error carries the exit status.
func (o *applyOptions) Run(ctx context.Context) error {
	rules, err := o.Drift.rules()
	if err != nil {
		return withExitCode(exitError, err)
	}
	desired, err := o.Prepare.render(ctx, &o.Source)
	if err != nil {
		return withExitCode(exitError, err)
	}
	tgt, err := o.Target.Connect()
	if err != nil {
		return withExitCode(exitError, err)
	}
	desired.Ignore = rules
	if o.DryRun {
		return o.dryRun(ctx, tgt, desired)
	}
	bar := startProgress(o.ErrOut, "applying")
	store := o.store(tgt)
	recorded, err := loadInventory(ctx, store)
	if err != nil {
		bar.Done()
		return withExitCode(exitError, err)
	}
	a, err := newApplier(tgt, o.Name, recorded, applierFlags{Force: o.Force, Progress: bar.Count, Desired: desired.Objects, Ignore: desired.Ignore})
	if err != nil {
		bar.Done()
		return withExitCode(exitError, err)
	}
	eopts := o.engineOptions(tgt, a, bar)
	var waveErr error
	if o.Wait {
		eopts.BetweenWaves = o.waitBetweenWaves(tgt, &waveErr)
	}
	res, err := engine.Run(ctx, desired.Objects, store, eopts)
	bar.Done() // ended by the apply already, unless the run stopped before it
	cs := res.Changes
	text := o.Out
	if o.Output != outputText {
		text = io.Discard
	}
	p := newPrinter(text)
	if cs == nil { // the inventory could not be loaded or recorded: nothing was applied
		return withExitCode(exitError, err)
	}
	printChangeSet(p, cs)
	printPruned(p, cs, res.Pruned)
	var ae *engine.ApplyError
	if errors.As(err, &ae) && ae.Run != nil { // the whole run stopped: apiserver unreachable, or interrupted
		return withExitCode(exitError, err)
	}
	if ae != nil && o.PruneEnabled {
		fmt.Fprintln(o.ErrOut, "warning: nothing pruned: not every object applied")
	}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	if res.Held {
		errs = append(errs, waveErr)
	}
	if o.Wait && len(errs) == 0 {
		if err := o.waitReady(ctx, tgt, cs, text); err != nil {
			errs = append(errs, err)
		}
	}
	p.Printf("%s\n", cs.Summary())
	if o.Output != outputText {
		if err := writeStructured(o.Out, o.Output, applyItems(cs, res.Pruned)); err != nil {
			errs = append(errs, err)
		}
	}
	return withExitCode(exitFailure, errors.Join(errs...))
}

// dryRun prints the diff an apply would make. Unlike gitsync diff it exits 0
// when there are differences: only an error fails it.
func (o *applyOptions) dryRun(ctx context.Context, tgt *connectedCluster, desired *renderedSource) error {
	name := o.Name
	rep, err := computeDiff(ctx, tgt, desired, diffRequest{Name: name, Force: o.Force, PreviewPrune: o.PruneEnabled, Prune: o.Prune})
	if err != nil {
		return withExitCode(exitError, err)
	}
	d := &diffOptions{Out: o.Out, ErrOut: o.ErrOut, Output: o.Output}
	if err := d.print(rep); err != nil {
		return withExitCode(exitError, err)
	}
	for _, w := range rep.Warnings {
		fmt.Fprintln(o.ErrOut, "warning:", w)
	}
	return withExitCode(exitFailure, rep.Errors())
}

// printChangeSet prints one line per entry: "Kind/ns/name created".
func printChangeSet(p *printer, cs *apply.ChangeSet) {
	for _, e := range cs.Entries {
		p.Printf("%s\n", changeLine(p, e))
	}
}

func changeLine(p *printer, e apply.Entry) string {
	line := e.Subject + " " + string(e.Action)
	if e.Action == "" {
		line = e.Subject + " not applied (an earlier wave is not ready)"
	}
	var notes []string
	if len(e.TookOver) > 0 {
		notes = append(notes, "took fields back from "+strings.Join(e.TookOver, ", "))
	}
	if e.Recreated {
		notes = append(notes, "recreated")
	}
	if len(notes) > 0 {
		line += " (" + strings.Join(notes, "; ") + ")"
	}
	switch e.Action {
	case apply.Created:
		return p.paint(colourGreen, line)
	case apply.Configured:
		return p.paint(colourYellow, line)
	case apply.Pruned:
		return p.paint(colourRed, line)
	case apply.Failed, apply.Skipped:
		if e.Err != nil {
			line += ": " + entryReason(e)
		}
		return p.paint(colourRed, line)
	}
	if e.Reason != "" {
		line += " (" + e.Reason + ")"
	}
	return line
}

// entryReason is why an entry failed or was skipped, without what the line
// already says: its subject and its outcome ("skipped: ", "apply failed: ").
func entryReason(e apply.Entry) string {
	msg := strings.TrimPrefix(e.Err.Error(), e.Subject+" ")
	for _, said := range []string{string(e.Action) + ": ", "apply failed: "} {
		msg = strings.TrimPrefix(msg, said)
	}
	return msg
}

// store is the inventory of the named sync; nil without --name (nothing
// recorded, nothing pruned).
func (o *applyOptions) store(tgt *connectedCluster) inventory.Store {
	if o.Name == "" {
		return nil
	}
	return inventory.NewConfigMapStore(tgt.Client, tgt.Namespace, o.Name)
}

// loadInventory is the stored inventory of store; nil for no store.
func loadInventory(ctx context.Context, store inventory.Store) (*inventory.Inventory, error) {
	if store == nil {
		return nil, nil
	}
	return store.Load(ctx)
}

// engineOptions are the sync pipeline's options for this apply: the
// applier, the prune rails of the flags and a progress bar while pruning.
// The bar of the apply ends when the pipeline moves on to record and prune.
func (o *applyOptions) engineOptions(tgt *connectedCluster, a *apply.Applier, applying *progress) engine.Options {
	opts := engine.DefaultOptions()
	opts.Applier = endProgress{Applier: a, bar: applying}
	opts.Client = tgt.Client
	opts.Prune = o.PruneEnabled
	opts.PruneOptions = o.Prune.options(tgt, o.Name)
	opts.OnPrune = func(n int) func() {
		bar := startProgress(o.ErrOut, fmt.Sprintf("pruning %d objects", n))
		return bar.Done
	}
	return opts
}

// endProgress ends the apply's progress bar when the apply returns.
type endProgress struct {
	*apply.Applier
	bar *progress
}

func (e endProgress) ApplyWaves(ctx context.Context, objs []*unstructured.Unstructured, gate apply.WaveGate) (*apply.ChangeSet, error) {
	defer e.bar.Done()
	return e.Applier.ApplyWaves(ctx, objs, gate)
}

// printPruned prints one line per pruned, kept or failed object and adds
// the pruned and failed ones to cs, so its summary counts them.
func printPruned(p *printer, cs *apply.ChangeSet, res *inventory.PruneResult) {
	if res == nil {
		return
	}
	for _, e := range res.Entries {
		switch e.Action {
		case inventory.ActionPruned:
			cs.Add(apply.Entry{ID: e.ID, Action: apply.Pruned})
			p.Printf("%s\n", p.paint(colourRed, e.ID.String()+" pruned"))
		case inventory.ActionKept:
			p.Printf("%s kept: %s\n", e.ID, e.Reason)
		case inventory.ActionUnknown:
			p.Printf("%s\n", p.paint(colourRed, fmt.Sprintf("%s not pruned: %s", e.ID, e.Reason)))
		case inventory.ActionFailed:
			cs.Add(apply.Entry{ID: e.ID, Action: apply.Failed, Err: e.Err})
			p.Printf("%s\n", p.paint(colourRed, fmt.Sprintf("%s prune failed: %s", e.ID, e.Reason)))
		}
	}
}

// waitReady waits for every applied object to become ready.
func (o *applyOptions) waitReady(ctx context.Context, tgt *connectedCluster, cs *apply.ChangeSet, out io.Writer) error {
	var ids []object.ID
	for _, e := range cs.Entries {
		switch e.Action {
		case apply.Created, apply.Configured, apply.Unchanged:
			ids = append(ids, e.ID)
		}
	}
	bar := startProgress(o.ErrOut, fmt.Sprintf("waiting for %d objects to become ready", len(ids)))
	_, err := health.Wait(ctx, tgt.Config, ids, o.waitOptions())
	bar.Done()
	if err != nil {
		return fmt.Errorf("wait: %w", err)
	}
	fmt.Fprintf(out, "%d objects ready\n", len(ids))
	return nil
}

// waitOptions are the options of every wait of --wait.
func (o *applyOptions) waitOptions() health.WaitOptions {
	return health.WaitOptions{Timeout: o.Timeout, Rules: o.HealthRules.set}
}

// applierFlags are the per-command switches of newApplier.
type applierFlags struct {
	Force, DryRun bool
	// Progress receives the applier's per-object progress (a progress bar).
	Progress func(done, total int)
	// Desired are the objects the applier will be given: their live state
	// is read with one LIST per (kind, namespace) where that saves requests.
	Desired []*unstructured.Unstructured
	// Ignore are the fields left alone (--ignore-field).
	Ignore drift.Rules
}

// newApplier builds the engine's Applier as the agent configures it: gitsync's
// field manager, kubectl's managers taken over, and when named the CLI
// owner's labels (never a GitSync's: `--name web -n prod` and the GitSync
// prod/web own different objects) with its recorded inventory, which
// proves objects labelled before the owner-kind label existed are its own.
// recorded is the named sync's stored inventory, nil without a name.
func newApplier(tgt *connectedCluster, name string, recorded *inventory.Inventory, f applierFlags) (*apply.Applier, error) {
	opts := apply.DefaultOptions()
	opts.Force = f.Force
	opts.DryRun = f.DryRun
	opts.Diff = f.DryRun
	opts.DefaultNamespace = tgt.Namespace
	opts.Progress = f.Progress
	opts.Ignore = f.Ignore
	if name != "" {
		opts.OwnerLabels = object.CLIOwner(tgt.Namespace, name).Labels()
		opts.Recorded = recorded
	}
	live := newListedReader(tgt.Client)
	a, err := apply.New(tgt.Config, live, opts)
	if err != nil {
		return nil, err
	}
	live.expect(f.Desired, a.IDs(f.Desired))
	return a, nil
}

// pruneFlags are the safety rails of pruning, shared by apply --prune and the
// prune preview of diff --name.
type pruneFlags struct {
	// AllowEmpty lets a source with no objects prune everything.
	AllowEmpty bool
	// MaxShare is the largest share of the inventory one run may prune.
	MaxShare float64
	// AllowNamespaces and AllowCRDs let stale Namespaces and CRDs go (each
	// only when it holds nothing else).
	AllowNamespaces, AllowCRDs bool
}

// AddFlags registers the prune rails.
func (f *pruneFlags) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&f.AllowEmpty, "allow-empty", false, "Let a source with no objects prune every object of the inventory.")
	fs.Float64Var(&f.MaxShare, "prune-max-share", inventory.DefaultPruneOptions().MaxShare, "Refuse to prune more than this share (0..1] of the inventory at once (checked above ten stale objects); 0 disables the limit.")
	fs.BoolVar(&f.AllowNamespaces, "prune-namespaces", false, "Allow pruning Namespaces that hold nothing but pruned objects.")
	fs.BoolVar(&f.AllowCRDs, "prune-crds", false, "Allow pruning CustomResourceDefinitions that have no other custom resources.")
}

// Validate checks the share is in range.
func (f *pruneFlags) Validate() error {
	if f.MaxShare < 0 || f.MaxShare > 1 {
		return fmt.Errorf("--prune-max-share %v must be between 0 and 1", f.MaxShare)
	}
	return nil
}

// options returns the inventory's prune options for sync name.
func (f *pruneFlags) options(tgt *connectedCluster, name string) inventory.PruneOptions {
	opts := inventory.DefaultPruneOptions()
	opts.Name, opts.Namespace = name, tgt.Namespace
	opts.CLI = true
	opts.AllowEmpty = f.AllowEmpty
	opts.MaxShare = f.MaxShare
	opts.AllowNamespaces, opts.AllowCRDs = f.AllowNamespaces, f.AllowCRDs
	opts.Discovery = tgt.Discovery
	opts.Mapper = tgt.Mapper
	return opts
}
