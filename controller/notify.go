package controller

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/commitstatus"
	"gitsync.dev/gitsync/notify"
	"gitsync.dev/gitsync/tenant"
)

// A GitSync with spec.notifications tells each destination of its
// transitions: Ready (it became Ready, or a new revision changed its
// objects while Ready), Failed (it failed, or its reason changed) and
// Recovered (Ready after a failure). The transition is read from the Ready
// condition before and after the status write of one pass, so a converged
// GitSync sends nothing, a retry failing for the same reason sends nothing,
// and a restarted agent sends nothing for a state its status already
// recorded. What is sent goes through a notify.Queue, off the sync path and
// rate-limited per (GitSync, destination). A failed send is logged,
// counted (gitsync_notification_errors_total) and a Warning event; it is
// not sent again and never sets a condition.

// newNotifyQueue returns the queue r's notifications go through, for as
// long as the agent runs.
func (r *GitSyncReconciler) newNotifyQueue() *notify.Queue {
	return notify.NewQueue(notify.QueueOptions{
		Send: r.sendNotification, Failed: r.notificationFailed, Clock: r.clock, Base: r.baseContext,
	})
}

// transitionOf returns the transition from before to after (the Ready
// condition around one status write), if any. changed says the pass
// changed objects; revision says the applied revision moved.
func transitionOf(before, after *metav1.Condition, revision, changed bool) (v1.NotificationEvent, bool) {
	if after == nil {
		return "", false
	}
	wasFailed := before != nil && before.Status == metav1.ConditionFalse && !progressReason(before.Reason)
	switch after.Status {
	case metav1.ConditionFalse:
		if progressReason(after.Reason) || (wasFailed && before.Reason == after.Reason) {
			return "", false
		}
		return v1.NotifyFailed, true
	case metav1.ConditionTrue:
		switch {
		case wasFailed:
			return v1.NotifyRecovered, true
		case before == nil || before.Status != metav1.ConditionTrue:
			return v1.NotifyReady, true
		case revision && changed:
			return v1.NotifyReady, true
		}
	}
	return "", false
}

// notifyTransition queues a notification to each destination of gs that
// wants the transition of this pass; called after the status write.
func (r *GitSyncReconciler) notifyTransition(gs *v1.GitSync, before *metav1.Condition, prevApplied string, out *outcome) {
	key := client.ObjectKeyFromObject(gs)
	if len(gs.Spec.Notifications) == 0 {
		r.notes.Forget(key)
		return
	}
	after := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReady)
	what, ok := transitionOf(before, after, prevApplied != gs.Status.LastAppliedRevision, out.changedObjects())
	if !ok {
		return
	}
	e := notify.Event{Namespace: gs.Namespace, Name: gs.Name, Revision: gs.Status.LastAppliedRevision,
		State: notify.State(what), Reason: after.Reason, Message: out.red.String(after.Message), Time: r.clock.Now()}
	if what == v1.NotifyFailed {
		e.Revision = gs.Status.LastAttemptedRevision
	}
	if slices.ContainsFunc(gs.Spec.Notifications, func(n v1.NotificationSpec) bool { return isComment(n.Provider) }) {
		e.Changes, e.MoreChanges = changesOf(out)
	}
	// What the send needs: the account the tenant boundary reads the
	// Secret as.
	slim := &v1.GitSync{TypeMeta: gs.TypeMeta, Spec: v1.GitSyncSpec{Source: gs.Spec.Source,
		ServiceAccountName: gs.Spec.ServiceAccountName, Interval: gs.Spec.Interval}}
	slim.Name, slim.Namespace, slim.UID, slim.ResourceVersion = gs.Name, gs.Namespace, gs.UID, gs.ResourceVersion
	for i, n := range gs.Spec.Notifications {
		if len(n.Events) > 0 && !slices.Contains(n.Events, what) {
			continue
		}
		r.notes.Add(notify.Item{Key: key, To: notify.Destination{Provider: n.Provider, Secret: n.SecretRef.Name, Index: i}, Event: e, Object: slim})
	}
}

// sendNotification reads the destination's address (and, for a webhook,
// its signing key) from the GitSync's Secret, as the GitSync's account,
// and sends one notification within ctx.
func (r *GitSyncReconciler) sendNotification(ctx context.Context, it notify.Item) error {
	gs := it.Object.(*v1.GitSync)
	secret, err := r.reader.For(gs, nil).Secret(ctx, tenant.Ref{Name: it.To.Secret, Field: tenant.NotificationField(it.To.Index)})
	if err != nil {
		return fmt.Errorf("Secret/%s/%s read failed: %w", it.Key.Namespace, it.To.Secret, err)
	}
	if isComment(it.To.Provider) {
		return r.postComments(ctx, gs, it, secret)
	}
	t := notify.Target{Provider: it.To.Provider, URL: strings.TrimSpace(string(secret.Data["address"])), Key: secret.Data["token"]}
	if err := notify.Send(ctx, r.notifyClient(), t, it.Event); err != nil {
		return fmt.Errorf("spec.notifications with Secret/%s/%s: %w", it.Key.Namespace, it.To.Secret, err)
	}
	return nil
}

// notificationFailed logs and counts a notification not sent, and records
// a Warning event.
func (r *GitSyncReconciler) notificationFailed(it notify.Item, err error) {
	ctrl.Log.WithName("notify").Info("notification not sent; syncing goes on", "gitsync", it.Key.String(),
		"provider", it.To.Provider, "state", string(it.Event.State), "error", err.Error())
	r.opts.Metrics.ObserveNotificationError(it.To.Provider)
	r.recorder.Eventf(it.Object, nil, corev1.EventTypeWarning, "NotificationFailed", "Notify", "%s", clipMessage(err.Error()))
}

// notifyClient is the one client every notification goes through: it
// dials through the agent's egress policy, follows no redirect and uses no
// proxy.
func (r *GitSyncReconciler) notifyClient() *http.Client {
	r.notifyHTTPOnce.Do(func() {
		r.notifyHTTP = commitstatus.NewHTTPClient(r.opts.Egress.DialContext, r.notes.Timeout())
	})
	return r.notifyHTTP
}

// isComment says whether provider comments on pull or merge requests.
func isComment(provider string) bool { return slices.Contains(notify.CommentProviders, provider) }

// changesOf returns what out did to the cluster's objects (created,
// configured, pruned, orphaned), masked by the sync's redactor: at most
// notify.MaxChanges of them, and how many more there were.
func changesOf(out *outcome) ([]notify.Change, int) {
	var list []notify.Change
	more := 0
	add := func(action, subject string) {
		if len(list) == notify.MaxChanges {
			more++
			return
		}
		list = append(list, notify.Change{Action: action, Subject: out.red.String(subject)})
	}
	out.eachChange(add)
	return list, more
}

// postComments comments on the pull or merge requests holding the event's
// commit, with the token (and the optional API address and ca.crt) of the
// GitSync's Secret; a revision without a commit, or a commit in no
// request, posts nothing.
func (r *GitSyncReconciler) postComments(ctx context.Context, gs *v1.GitSync, it notify.Item, secret *corev1.Secret) error {
	commit := commitOf(it.Event.Revision)
	if commit == "" {
		return nil
	}
	where := fmt.Sprintf("spec.notifications with Secret/%s/%s", it.Key.Namespace, it.To.Secret)
	hc := r.notifyClient()
	if ca := secret.Data["ca.crt"]; len(ca) > 0 {
		var err error
		if hc, err = commitstatus.WithCA(hc, ca); err != nil {
			return fmt.Errorf("%s key ca.crt: %w", where, err)
		}
		defer hc.CloseIdleConnections()
	}
	c, err := commitstatus.NewCommenter(commitstatus.Options{
		Provider:    it.To.Provider,
		RepoURL:     gs.Spec.Source.URL,
		Address:     strings.TrimSpace(string(secret.Data["address"])),
		Credentials: commitstatus.Credentials{Token: strings.TrimSpace(string(secret.Data["token"]))},
		Client:      hc,
	})
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if _, err := c.Comment(ctx, commit, notify.CommentBody(it.Event)); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}
