package controller

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/commitstatus"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/git/githubapp"
	"gitsync.dev/gitsync/tenant"
)

// A GitSync with spec.commitStatus reports its attempts on the commit it
// syncs through the Git host's API: pending when a new revision starts
// applying (and while its objects are waited on), success when Ready,
// failure with the reason. What to report and when is decided here; the
// reports are sent by a commitstatus.Queue, which never holds a sync and
// posts only on change (a converged GitSync posts nothing; after a restart
// the current state is posted once more). A failed post is logged,
// counted (gitsync_commit_status_errors_total) and, once per report, a
// Warning event; it is tried again at the GitSync's next reconcile. It
// never sets a condition.

// newCommitQueue returns the queue r's reports go through, posting within
// timeout (0: commitstatus.DefaultTimeout) for as long as the agent runs.
func (r *GitSyncReconciler) newCommitQueue(timeout time.Duration) *commitstatus.Queue {
	return commitstatus.NewQueue(commitstatus.QueueOptions{
		Post: r.postCommit, Failed: r.commitPostFailed, Timeout: timeout, Base: r.baseContext,
	})
}

// reportOf returns the report of state on commit for gs.
func reportOf(gs *v1.GitSync, commit string, state commitstatus.State, description string) commitstatus.Report {
	spec := *gs.Spec.CommitStatus
	name := spec.Context
	if name == "" {
		name = "gitsync/" + gs.Namespace + "/" + gs.Name
	}
	// What the post needs, and what the tenant boundary reads its token
	// as: the account and the interval its answers last.
	slim := &v1.GitSync{TypeMeta: gs.TypeMeta, Spec: v1.GitSyncSpec{Source: gs.Spec.Source,
		ServiceAccountName: gs.Spec.ServiceAccountName, Interval: gs.Spec.Interval}}
	slim.Name, slim.Namespace, slim.UID, slim.ResourceVersion = gs.Name, gs.Namespace, gs.UID, gs.ResourceVersion
	return commitstatus.Report{
		Key:    client.ObjectKeyFromObject(gs),
		To:     commitstatus.Destination{Provider: spec.Provider, RepoURL: gs.Spec.Source.URL, Address: spec.Address, Secret: spec.SecretRef.Name},
		Status: commitstatus.Status{Commit: commit, State: state, Description: description, Context: name},
		Object: slim,
	}
}

// commitApplying reports rev (in Revision.String() form) as pending when a
// revision other than the one applied last starts being applied; a drift
// repair or a retry of the same commit reports nothing new.
func (r *GitSyncReconciler) commitApplying(gs *v1.GitSync, rev fmt.Stringer) {
	revision := rev.String()
	commit := commitOf(revision)
	if gs.Spec.CommitStatus == nil || commit == "" || gs.Status.LastAppliedRevision == revision {
		return
	}
	if last, ok := r.commits.LastCommit(client.ObjectKeyFromObject(gs)); ok && last == commit {
		return
	}
	r.reportCommit(gs, commit, commitstatus.Pending, "Applying revision "+revision)
}

// commitOutcome reports what a sync did to the commit it attempted, after
// its status was written: success with the Ready message, pending while it
// waits for health, failure with the reason. A sync that failed before a
// commit was resolved reports nothing.
func (r *GitSyncReconciler) commitOutcome(gs *v1.GitSync, out *outcome) {
	if gs.Spec.CommitStatus == nil {
		r.commits.Forget(client.ObjectKeyFromObject(gs))
		return
	}
	commit := commitOf(out.attempted)
	if commit == "" {
		return
	}
	se := out.syncErr()
	switch {
	case se == nil && out.waiting != "":
		r.reportCommit(gs, commit, commitstatus.Pending, out.waiting)
	case se == nil:
		msg := "Applied revision " + out.applied
		if c := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReady); c != nil {
			msg = c.Message
		}
		r.reportCommit(gs, commit, commitstatus.Success, msg)
	default:
		r.reportCommit(gs, commit, commitstatus.Failure, se.Reason+": "+se.Error())
	}
}

// commitOf returns the commit of a revision in Revision.String() form, ""
// for another text.
func commitOf(rev string) string {
	r, _ := git.ParseRevision(rev)
	return r.Commit
}

// reportCommit queues a report; the queue drops it when it says what the
// last one did.
func (r *GitSyncReconciler) reportCommit(gs *v1.GitSync, commit string, state commitstatus.State, description string) {
	r.commits.Add(reportOf(gs, commit, state, description))
}

// postCommit reads the token (and ca.crt, a private CA to trust) from the
// GitSync's Secret and posts one report, within ctx (the queue bounds it by
// the post timeout).
func (r *GitSyncReconciler) postCommit(ctx context.Context, rep commitstatus.Report) error {
	gs := rep.Object.(*v1.GitSync)
	key := client.ObjectKey{Namespace: rep.Key.Namespace, Name: rep.To.Secret}
	// Read as the GitSync's account, like everything it names: the token
	// goes to a host the tenant chose.
	secret, err := r.reader.For(gs, nil).Secret(ctx, tenant.Ref{Name: key.Name, Field: "spec.commitStatus.secretRef"})
	if err != nil {
		return fmt.Errorf("Secret/%s/%s read failed: %w", key.Namespace, key.Name, err)
	}
	hc := r.commitClient()
	if ca := secret.Data["ca.crt"]; len(ca) > 0 {
		var err error
		if hc, err = commitstatus.WithCA(hc, ca); err != nil {
			return fmt.Errorf("Secret/%s/%s key ca.crt: %w", key.Namespace, key.Name, err)
		}
		defer hc.CloseIdleConnections()
	}
	creds := commitstatus.Credentials{Token: strings.TrimSpace(string(secret.Data["token"])),
		Username: string(secret.Data["username"]), Password: string(secret.Data["password"])}
	if app, ok := githubapp.FromSecret(secret.Data); ok && rep.To.Provider == "github" {
		if creds.Token, err = r.appToken(ctx, app, rep.To, secret.Data["ca.crt"]); err != nil {
			return fmt.Errorf("spec.commitStatus with Secret/%s/%s: %w", key.Namespace, key.Name, err)
		}
	}
	p, err := commitstatus.New(commitstatus.Options{
		Provider:    rep.To.Provider,
		RepoURL:     rep.To.RepoURL,
		Address:     rep.To.Address,
		Credentials: creds,
		Client:      hc,
	})
	if err != nil {
		return fmt.Errorf("spec.commitStatus with Secret/%s/%s: %w", key.Namespace, key.Name, err)
	}
	return p.Post(ctx, rep.Status)
}

// appToken is the installation token of the GitHub App in a commit status
// Secret, for the repository the statuses go to; the app's API is
// spec.commitStatus.address when the Secret names none.
func (r *GitSyncReconciler) appToken(ctx context.Context, app *githubapp.App, to commitstatus.Destination, ca []byte) (string, error) {
	repo, err := commitstatus.ParseRepository(to.RepoURL)
	if err != nil {
		return "", err
	}
	if app.BaseURL == "" {
		app.BaseURL = to.Address
	}
	app.CAData = ca
	tok, err := r.githubApps().Token(ctx, *app, repo.Path)
	return tok.Value, err
}

// commitPostFailed logs and counts a failed post, and records a Warning
// event the first time a report fails.
func (r *GitSyncReconciler) commitPostFailed(rep commitstatus.Report, err error, event bool) {
	ctrl.Log.WithName("commit-status").Info("commit status not posted; syncing goes on", "gitsync", rep.Key.String(),
		"provider", rep.To.Provider, "commit", rep.Status.Commit, "state", string(rep.Status.State), "error", err.Error())
	r.opts.Metrics.ObserveCommitStatusError(rep.To.Provider)
	if event {
		r.recorder.Eventf(rep.Object, nil, corev1.EventTypeWarning, "CommitStatusFailed", "PostCommitStatus", "%s", clipMessage(err.Error()))
	}
}

// commitClient is the one client every post goes through: it dials
// through the agent's egress policy, follows no redirect and uses no proxy.
func (r *GitSyncReconciler) commitClient() *http.Client {
	r.commitHTTPOnce.Do(func() {
		r.commitHTTP = commitstatus.NewHTTPClient(r.opts.Egress.DialContext, r.commits.Timeout())
	})
	return r.commitHTTP
}
