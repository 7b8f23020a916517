package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
)

// reconcileOptions are the inputs of gitsync reconcile.
type reconcileOptions struct {
	Target targetOptions
	// Name is the GitSync, in the target namespace.
	Name string
	// Wait waits until the agent has handled the request and the GitSync is
	// Ready (or has failed), up to Timeout.
	Wait    bool
	Timeout time.Duration
	// WithSource is accepted for Flux users: every requested reconcile asks
	// the remote for its newest revision, so it changes nothing.
	WithSource bool

	Out, ErrOut io.Writer
	// now stamps the request.
	now func() time.Time
}

// newReconcileCmd returns the reconcile command.
func newReconcileCmd(kube *genericclioptions.ConfigFlags) *cobra.Command {
	o := &reconcileOptions{Target: targetOptions{Flags: kube}, now: time.Now}
	cmd := &cobra.Command{
		Use:   "reconcile NAME",
		Short: "Ask the agent to sync a GitSync now",
		Long: `Ask the agent to sync a GitSync now, instead of at its next interval.

The request is the annotation gitsync.dev/requested-at set to the current
time. The agent then asks the remote for the newest revision of the GitSync's
ref (whatever the interval says), applies it, repairs drift and prunes. The
source is always fetched afresh: --with-source is accepted, as Flux users
type it, and changes nothing.

With --wait the command waits until the agent has handled this request
(status.lastHandledRequestedAt) and prints the outcome. A suspended GitSync
is refused: resume it first.

Exit status: 0 requested (with --wait: Ready), 1 the sync failed or the wait
timed out, 2 bad flags or the GitSync cannot be read or annotated.`,
		Example: `  # Sync web in prod now and wait for the outcome
  gitsync reconcile web -n prod --wait

  # Only ask; the agent syncs in the background
  gitsync reconcile web -n prod`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeGitSyncs(kube),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Out, o.ErrOut, o.Name = cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0]
			if o.Timeout <= 0 {
				return withExitCode(exitError, errors.New("--timeout must be positive"))
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withExitCode(exitError, err) })
	cmd.Flags().BoolVar(&o.Wait, "wait", false, "Wait until the agent has handled the request and print whether the GitSync is Ready.")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 5*time.Minute, "How long --wait waits.")
	cmd.Flags().BoolVar(&o.WithSource, "with-source", false, "Accepted for Flux users; the source is always fetched afresh.")
	return cmd
}

// Run annotates the GitSync and, with Wait, waits for the outcome.
func (o *reconcileOptions) Run(ctx context.Context) error {
	tgt, gs, err := connectGitSync(ctx, &o.Target, o.Name)
	if err != nil {
		return err
	}
	key := client.ObjectKeyFromObject(gs)
	token, err := requestReconcile(ctx, tgt.Client, gs, o.now())
	if err != nil {
		return withExitCode(exitError, err)
	}
	fmt.Fprintf(o.Out, "GitSync/%s/%s reconcile requested\n", key.Namespace, key.Name)
	if !o.Wait {
		return nil
	}
	bar := startProgress(o.ErrOut, "waiting for the agent")
	gs, err = waitHandled(ctx, tgt.Client, key, token, o.Timeout)
	bar.Done()
	if err != nil {
		return withExitCode(exitFailure, err)
	}
	ready := meta.FindStatusCondition(gs.Status.Conditions, gitsyncv1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue {
		msg := "no Ready condition"
		if ready != nil {
			msg = ready.Reason + ": " + ready.Message
		}
		return withExitCode(exitFailure, fmt.Errorf("GitSync/%s/%s not ready: %s", key.Namespace, key.Name, msg))
	}
	fmt.Fprintf(o.Out, "GitSync/%s/%s ready: %s\n", key.Namespace, key.Name, gs.Status.LastAppliedRevision)
	return nil
}

// requestReconcile asks the agent to sync gs now: the annotation
// gitsync.dev/requested-at set to now, which it returns. A suspended
// GitSync is refused.
func requestReconcile(ctx context.Context, c client.Client, gs *gitsyncv1.GitSync, now time.Time) (string, error) {
	key := client.ObjectKeyFromObject(gs)
	if gs.Spec.Suspend {
		return "", fmt.Errorf("GitSync/%s/%s is suspended: run gitsync resume %s -n %s first", key.Namespace, key.Name, key.Name, key.Namespace)
	}
	token := now.UTC().Format(time.RFC3339Nano)
	return token, annotate(ctx, c, key, gitsyncv1.AnnotationRequestedAt, token)
}

// annotate sets one annotation with a merge patch (nothing else changes,
// and no resourceVersion is needed).
func annotate(ctx context.Context, c client.Client, key client.ObjectKey, name, value string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, name, value)
	return patchGitSync(ctx, c, key, patch)
}

// patchGitSync applies a JSON merge patch to a GitSync.
func patchGitSync(ctx context.Context, c client.Client, key client.ObjectKey, patch string) error {
	gs := &gitsyncv1.GitSync{}
	gs.Namespace, gs.Name = key.Namespace, key.Name
	if err := c.Patch(ctx, gs, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("GitSync/%s/%s patch failed: %w", key.Namespace, key.Name, err)
	}
	return nil
}

// waitHandled polls the GitSync until the agent reports it handled the
// request token for the current generation.
func waitHandled(ctx context.Context, c client.Reader, key client.ObjectKey, token string, timeout time.Duration) (*gitsyncv1.GitSync, error) {
	var gs *gitsyncv1.GitSync
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		got := &gitsyncv1.GitSync{}
		if err := c.Get(ctx, key, got); err != nil {
			return false, err
		}
		gs = got
		return got.Status.LastHandledRequestedAt == token && got.Status.ObservedGeneration == got.Generation, nil
	})
	switch {
	case wait.Interrupted(err) && ctx.Err() == nil:
		return gs, fmt.Errorf("GitSync/%s/%s: the agent did not report handling the request within %s (is gitsync run watching this namespace?)", key.Namespace, key.Name, timeout)
	case err != nil:
		return gs, fmt.Errorf("GitSync/%s/%s: %w", key.Namespace, key.Name, err)
	}
	return gs, nil
}
