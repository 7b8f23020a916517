package main

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"

	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/diff"
	"gitsync.dev/gitsync/object"
)

// buildOptions are the inputs of gitsync build.
type buildOptions struct {
	Source sourceOptions
	Target targetOptions
	// Prepare substitutes variables and decrypts SOPS files as a GitSync would.
	Prepare prepareFlags
	// Name stamps the owner labels of `gitsync apply --name NAME` (in the
	// -n namespace), as that apply sends them; empty stamps none.
	Name string
	// GitSync ("NAMESPACE/NAME") builds what the agent applies for that
	// GitSync: its source, revision, spec.helm, owner labels and namespace.
	GitSync string
	// Output is "yaml" (documents separated by ---) or "json" (a v1 List).
	Output string

	Out, ErrOut io.Writer
}

// newBuildCmd returns the build command.
func newBuildCmd(kube *genericclioptions.ConfigFlags) *cobra.Command {
	o := &buildOptions{}
	o.Target.Flags = kube
	cmd := &cobra.Command{
		Use:   "build [DIR]",
		Short: "Print the objects a directory, repository or GitSync renders to, as they would be applied",
		Long: `Print the objects a directory, repository or GitSync renders to, as they
would be applied, like helm template and flux build kustomization.

The objects are those gitsync diff and gitsync apply start from: rendered
exactly as the agent renders them (plain YAML, kustomize or a Helm chart with
its values), then substituted (--substitute, --substitute-from-file) and
decrypted (--age-key-file). Secret data and stringData values are printed as
***, and any value from a --substitute-from-file file or a SOPS file as ***
wherever it lands. Objects are printed in render order: by group, kind,
namespace and name, the order diff and apply list them in (apply writes them
in its stages: CRDs, Namespaces and cluster-wide classes first).

A directory or --url needs no cluster: nothing is read from one, so a chart
sees Helm's default capabilities (as helm template does), where diff and apply
show it the cluster's version and APIs. With --name
the objects carry the owner labels apply --name stamps (its -n namespace
named in them); without it, none. Objects without a namespace are printed
without one: apply puts the namespaced ones in the -n namespace, and which
kinds are namespaced only a cluster knows.

With --gitsync NAMESPACE/NAME the GitSync is read from the cluster and its
source is rendered as the agent renders it (DIR, when given, is a checkout of
its repository; else its repository at its spec, the ref flags overriding the
ref), with its spec.helm, spec.ignore, post-render changes (spec.patches, spec.images,
spec.commonMetadata) and the cluster's capabilities; the objects carry its owner labels
and are placed as the agent's applier places them (spec.targetNamespace, else
the GitSync's namespace, for namespaced kinds). Its variables
(spec.substitute, spec.substituteFrom) and decryption key (spec.decryption)
are read with your own identity, their Secret values masked; substitution
flags replace its variables, --age-key-file its key.

Exit status: 0 printed, 2 error (invalid manifests, a missing directory, a
render or decryption error, an unreachable cluster with --gitsync); nothing is
printed on stdout then.`,
		Example: `  # Print what ./deploy renders to, without a cluster
  gitsync build ./deploy

  # A Helm chart directory with values, as one v1 List
  gitsync build ./charts/web --helm-values prod.yaml --release-name web -n prod -o json

  # With SOPS files decrypted (Secret values stay masked) and variables substituted
  gitsync build ./deploy --age-key-file key.agekey --substitute ENV=prod

  # What the agent applies for the GitSync prod/web
  gitsync build --gitsync prod/web`,
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
	cmd.Flags().StringVar(&o.Name, "name", "", "Stamp the owner labels of \"gitsync apply --name NAME\", as that apply sends them.")
	cmd.Flags().StringVar(&o.GitSync, "gitsync", "", "Print what the agent applies for the GitSync NAMESPACE/NAME (needs a cluster); DIR is a checkout of its repository (default: its source at its spec).")
	cmd.Flags().StringVarP(&o.Output, "output", "o", outputYAML, "Output format: yaml (documents separated by ---) or json (one v1 List).")
	_ = cmd.RegisterFlagCompletionFunc("gitsync", func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return gitSyncNames(cmd.Context(), kube, toComplete, true), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// Complete validates the flags and takes the directory argument.
func (o *buildOptions) Complete(args []string) error {
	if o.GitSync != "" {
		if o.Name != "" {
			return errors.New("--gitsync and --name name different owners: give one")
		}
		if err := o.Source.CompleteOptional(args); err != nil {
			return err
		}
	} else if err := o.Source.Complete(args); err != nil {
		return err
	}
	o.Source.Rendering.useTarget(o.Name, &o.Target) // chart release defaults
	if o.GitSync == "" {
		o.Source.Rendering.capabilities = nil // a directory reads no cluster: Helm's defaults
	}
	return validateOutput(o.Output, outputJSON, outputYAML)
}

// Run renders and prints. Everything is rendered and encoded before the
// first byte is written, so an error leaves stdout empty.
func (o *buildOptions) Run(ctx context.Context) error {
	objs, err := o.objects(ctx)
	if err != nil {
		return withExitCode(exitError, err)
	}
	out, err := encodeObjects(objs, o.Output)
	if err != nil {
		return withExitCode(exitError, err)
	}
	_, err = o.Out.Write(out) // one write: the redactor sees every value whole
	return withExitCode(exitError, err)
}

// objects are the desired objects as apply (or, with --gitsync, the agent)
// would send them.
func (o *buildOptions) objects(ctx context.Context) ([]*unstructured.Unstructured, error) {
	if o.GitSync != "" {
		return o.gitSyncObjects(ctx)
	}
	desired, err := o.Prepare.render(ctx, &o.Source) // what diff and apply start from
	if err != nil {
		return nil, err
	}
	var labels map[string]string
	if o.Name != "" {
		ns, err := o.Target.Namespace()
		if err != nil {
			return nil, err
		}
		labels = object.CLIOwner(ns, o.Name).Labels() // newApplier's owner for --name
	}
	out := make([]*unstructured.Unstructured, len(desired.Objects))
	for i, obj := range desired.Objects {
		out[i] = apply.WithOwnerLabels(obj, labels)
	}
	return out, nil
}

// gitSyncObjects are the objects of `diff --gitsync`, placed and labelled
// by the same applier, which writes nothing here.
func (o *buildOptions) gitSyncObjects(ctx context.Context) ([]*unstructured.Unstructured, error) {
	user, err := o.Target.Connect()
	if err != nil {
		return nil, err
	}
	p, err := newGitSyncPreview(ctx, user, o.GitSync)
	if err != nil {
		return nil, err
	}
	desired, err := p.desired(ctx, user, &o.Source, &o.Prepare)
	if err != nil {
		return nil, err
	}
	a, err := p.applier(desired.Objects, nil) // placing only: ignore rules need the live objects
	if err != nil {
		return nil, err
	}
	return a.Prepared(desired.Objects), nil
}

// encodeObjects masks every Secret value (diff.Mask, as diffs show them)
// and every value the process's redactor knows, and encodes objs as YAML
// documents separated by "---", or as one v1 List in JSON, the form kubectl
// reads back.
func encodeObjects(objs []*unstructured.Unstructured, format string) ([]byte, error) {
	masked := make([]map[string]any, len(objs))
	for i, obj := range objs {
		masked[i] = redactStrings(diff.Mask(obj).Object).(map[string]any)
	}
	var buf bytes.Buffer
	if format == outputJSON {
		list := map[string]any{"apiVersion": "v1", "kind": "List", "items": masked}
		if err := writeJSON(&buf, list); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	for i, obj := range masked {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

// redactStrings masks, with the process's redactor, each string of v (a
// decoded object, changed in place): masked before encoding, a value is
// quoted as the encoder quotes "***", so the output stays valid YAML, which
// stdout's own masking of encoded text could not promise.
func redactStrings(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = redactStrings(e)
		}
	case []any:
		for i, e := range t {
			t[i] = redactStrings(e)
		}
	case string:
		return sensitive.String(t)
	}
	return v
}
