package main

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
)

// completionTimeout bounds the cluster reads of one shell completion: a
// slow or unreachable cluster must not hang the user's shell.
const completionTimeout = 5 * time.Second

// completeGitSyncs completes the first argument with the names of the
// GitSyncs in the namespace the flags select.
func completeGitSyncs(kube *genericclioptions.ConfigFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return gitSyncNames(cmd.Context(), kube, toComplete, false), cobra.ShellCompDirectiveNoFileComp
	}
}

// gitSyncNames lists the GitSyncs starting with prefix: their names in the
// selected namespace, or NAMESPACE/NAME in every namespace (diff --gitsync).
func gitSyncNames(ctx context.Context, kube *genericclioptions.ConfigFlags, prefix string, qualified bool) []cobra.Completion {
	o := targetOptions{Flags: kube}
	tgt, err := o.Connect()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(orBackground(ctx), completionTimeout)
	defer cancel()
	list := &gitsyncv1.GitSyncList{}
	var opts []client.ListOption
	if !qualified {
		opts = append(opts, client.InNamespace(tgt.Namespace))
	}
	if err := tgt.Client.List(ctx, list, opts...); err != nil {
		return nil
	}
	var out []cobra.Completion
	for _, gs := range list.Items {
		name := gs.Name
		if qualified {
			name = gs.Namespace + "/" + gs.Name
		}
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	return out
}

// registerKubeCompletions completes --namespace with the cluster's
// Namespaces and --context, --cluster and --user with the kubeconfig's names.
func registerKubeCompletions(root *cobra.Command, kube *genericclioptions.ConfigFlags) {
	_ = root.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return namespaceNames(cmd.Context(), kube, toComplete), cobra.ShellCompDirectiveNoFileComp
	})
	for _, flag := range []string{"context", "cluster", "user"} {
		_ = root.RegisterFlagCompletionFunc(flag, func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return withPrefix(kubeconfigNames(kube, flag), toComplete), cobra.ShellCompDirectiveNoFileComp
		})
	}
}

func namespaceNames(ctx context.Context, kube *genericclioptions.ConfigFlags, prefix string) []cobra.Completion {
	o := targetOptions{Flags: kube}
	tgt, err := o.Connect()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(orBackground(ctx), completionTimeout)
	defer cancel()
	list := &corev1.NamespaceList{}
	if err := tgt.Client.List(ctx, list); err != nil {
		return nil
	}
	names := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	return withPrefix(names, prefix)
}

// kubeconfigNames lists the kubeconfig's names of one kind: "context",
// "cluster" or "user".
func kubeconfigNames(kube *genericclioptions.ConfigFlags, kind string) []string {
	raw, err := kube.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil
	}
	var out []string
	switch kind {
	case "context":
		out = slices.Collect(maps.Keys(raw.Contexts))
	case "cluster":
		out = slices.Collect(maps.Keys(raw.Clusters))
	case "user":
		out = slices.Collect(maps.Keys(raw.AuthInfos))
	}
	return out
}

// withPrefix keeps the names starting with prefix, sorted.
func withPrefix(names []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func orBackground(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}
