package controller

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/commitstatus"
	"gitsync.dev/gitsync/tenant"
)

// commitStatuses reports each GitSync's attempts on the commit it syncs
// through the Git host's API (spec.commitStatus): pending when a new
// revision starts applying (and while its objects are waited on), success
// when Ready, failure with the reason.
//
// Posting never holds a sync: reports are queued per GitSync and one
// goroutine per GitSync sends them in order, each bounded by
// commitstatus.DefaultTimeout and the agent's life; a queue keeps only the
// newest maxQueuedReports. A failed post is logged, counted
// (gitsync_commit_status_errors_total) and, once per report, a Warning
// event; it is tried again at the GitSync's next reconcile. It never sets a
// condition.
//
// Reports are sent only on change: the last one queued per GitSync is
// remembered in memory, so a converged GitSync posts nothing; after a
// restart the current state is posted once more.
type commitStatuses struct {
	once   sync.Once
	client *http.Client
	// timeout bounds one post (the Secret read included); zero means
	// commitstatus.DefaultTimeout. Tests lengthen it.
	timeout time.Duration

	mu    sync.Mutex
	byKey map[types.NamespacedName]*commitReports
}

// maxQueuedReports bounds a GitSync's queue while its host is slow: the
// newest reports are the ones worth sending.
const maxQueuedReports = 8

// commitReports is one GitSync's memory and queue.
type commitReports struct {
	last    commitReport // the last report queued
	queue   []commitReport
	running bool
	failed  commitReport // the last report whose post failed, for one event each
}

// commitReport is one status for one commit, with the GitSync it is about
// (a copy of what posting needs: the source URL, and the identity events
// are recorded on).
type commitReport struct {
	gs     *v1.GitSync
	spec   v1.CommitStatusSpec
	status commitstatus.Status
}

// reportOf returns the report of state on commit for gs.
func reportOf(gs *v1.GitSync, commit string, state commitstatus.State, description string) commitReport {
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
	return commitReport{gs: slim, spec: spec,
		status: commitstatus.Status{Commit: commit, State: state, Description: description, Context: name}}
}

// same reports whether o says what c says, to the same place: a failure is
// new when its reason changed, other states only when their state did
// (a host such as GitLab refuses to set a state a status already has).
func (c commitReport) same(o commitReport) bool {
	if c.gs == nil || o.gs == nil {
		return false
	}
	if c.spec != o.spec || c.gs.Spec.Source.URL != o.gs.Spec.Source.URL {
		return false
	}
	a, b := c.status, o.status
	return a.Commit == b.Commit && a.State == b.State && a.Context == b.Context &&
		(a.State != commitstatus.Failure || a.Description == b.Description)
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
	key := client.ObjectKeyFromObject(gs)
	r.commits.mu.Lock()
	last := r.commits.byKey[key]
	r.commits.mu.Unlock()
	if last != nil && last.last.status.Commit == commit {
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
		r.commits.forget(client.ObjectKeyFromObject(gs))
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

// commitOf returns the commit of a revision in Revision.String() form.
func commitOf(rev string) string {
	i := strings.LastIndex(rev, "sha1:")
	if i < 0 {
		return ""
	}
	return rev[i+len("sha1:"):]
}

// reportCommit queues a report unless it is the last one queued, and starts
// the GitSync's sender when none runs.
func (r *GitSyncReconciler) reportCommit(gs *v1.GitSync, commit string, state commitstatus.State, description string) {
	rep := reportOf(gs, commit, state, description)
	key := client.ObjectKeyFromObject(gs)
	c := &r.commits
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[types.NamespacedName]*commitReports{}
	}
	q := c.byKey[key]
	if q == nil {
		q = &commitReports{}
		c.byKey[key] = q
	}
	if rep.same(q.last) {
		return
	}
	q.last = rep
	if len(q.queue) == maxQueuedReports {
		q.queue = q.queue[1:]
	}
	q.queue = append(q.queue, rep)
	if !q.running {
		q.running = true
		go r.sendCommitReports(key, q)
	}
}

// sendCommitReports posts q's reports in order until the queue is empty or
// the agent stops.
func (r *GitSyncReconciler) sendCommitReports(key types.NamespacedName, q *commitReports) {
	ctx := r.baseContext()
	c := &r.commits
	for {
		c.mu.Lock()
		if len(q.queue) == 0 || ctx.Err() != nil {
			q.queue, q.running = nil, false
			c.mu.Unlock()
			return
		}
		rep := q.queue[0]
		q.queue = q.queue[1:]
		c.mu.Unlock()
		err := r.postCommit(ctx, rep)
		c.mu.Lock()
		firstFailure := err != nil && !rep.same(q.failed)
		switch {
		case err == nil:
			q.failed = commitReport{}
		case rep.same(q.last):
			// Nothing newer is queued: let the next reconcile try again.
			q.failed, q.last = rep, commitReport{}
		default:
			q.failed = rep
		}
		c.mu.Unlock()
		if err != nil {
			r.commitPostFailed(key, rep, err, firstFailure)
		}
	}
}

// postCommit reads the token (and ca.crt, a private CA to trust) from the
// GitSync's Secret and posts one report, both within the post timeout.
func (r *GitSyncReconciler) postCommit(ctx context.Context, rep commitReport) error {
	ctx, cancel := context.WithTimeout(ctx, r.commits.postTimeout())
	defer cancel()
	key := client.ObjectKey{Namespace: rep.gs.Namespace, Name: rep.spec.SecretRef.Name}
	// Read as the GitSync's account, like everything it names: the token
	// goes to a host the tenant chose.
	secret, err := r.reader.For(rep.gs, nil).Secret(ctx, tenant.Ref{Name: key.Name, Field: "spec.commitStatus.secretRef"})
	if err != nil {
		return fmt.Errorf("Secret/%s/%s read failed: %w", key.Namespace, key.Name, err)
	}
	hc := r.commits.httpClient(r)
	if ca := secret.Data["ca.crt"]; len(ca) > 0 {
		var err error
		if hc, err = commitstatus.WithCA(hc, ca); err != nil {
			return fmt.Errorf("Secret/%s/%s key ca.crt: %w", key.Namespace, key.Name, err)
		}
		defer hc.CloseIdleConnections()
	}
	p, err := commitstatus.New(commitstatus.Options{
		Provider: rep.spec.Provider,
		RepoURL:  rep.gs.Spec.Source.URL,
		Address:  rep.spec.Address,
		Credentials: commitstatus.Credentials{Token: strings.TrimSpace(string(secret.Data["token"])),
			Username: string(secret.Data["username"]), Password: string(secret.Data["password"])},
		Client: hc,
	})
	if err != nil {
		return fmt.Errorf("spec.commitStatus with Secret/%s/%s: %w", key.Namespace, key.Name, err)
	}
	return p.Post(ctx, rep.status)
}

// commitPostFailed logs and counts a failed post, and records a Warning
// event the first time a report fails.
func (r *GitSyncReconciler) commitPostFailed(key types.NamespacedName, rep commitReport, err error, event bool) {
	ctrl.Log.WithName("commit-status").Info("commit status not posted; syncing goes on", "gitsync", key.String(),
		"provider", rep.spec.Provider, "commit", rep.status.Commit, "state", string(rep.status.State), "error", err.Error())
	r.opts.Metrics.ObserveCommitStatusError(rep.spec.Provider)
	if event {
		r.recorder.Eventf(rep.gs, nil, corev1.EventTypeWarning, "CommitStatusFailed", "PostCommitStatus", "%s", clip(err.Error()))
	}
}

// httpClient is the one client every post goes through: it dials through
// the agent's egress policy, follows no redirect and uses no proxy.
func (c *commitStatuses) httpClient(r *GitSyncReconciler) *http.Client {
	c.once.Do(func() {
		c.client = commitstatus.NewHTTPClient(r.opts.Egress.DialContext, c.postTimeout())
	})
	return c.client
}

func (c *commitStatuses) postTimeout() time.Duration {
	if c.timeout > 0 {
		return c.timeout
	}
	return commitstatus.DefaultTimeout
}

// forget drops a GitSync's memory; a sender still running finishes its
// queue.
func (c *commitStatuses) forget(key types.NamespacedName) {
	c.mu.Lock()
	delete(c.byKey, key)
	c.mu.Unlock()
}
