package agent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/controller"
	"gitsync.dev/gitsync/metrics"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/webhook"
)

// indexByURL registers v1.IndexSourceURL with mgr's cache: the webhook
// GitSyncs by normalised source URL, which the receiver's lookup lists.
func indexByURL(ctx context.Context, mgr manager.Manager) error {
	return mgr.GetFieldIndexer().IndexField(ctx, &v1.GitSync{}, v1.IndexSourceURL, func(obj client.Object) []string {
		gs := obj.(*v1.GitSync)
		if gs.Spec.Webhook == nil {
			return nil
		}
		return []string{git.NormalizeRepoURL(gs.Spec.Source.URL)}
	})
}

// WebhookLookup returns a webhook.Options.Lookup: the GitSyncs with a
// webhook, not suspended, whose source URL normalises to repoURL, found
// through v1.IndexSourceURL in gitsyncs (an informer cache), each with the
// secret secretOf reads for it (a GitSync whose secret cannot be read is
// left out).
func WebhookLookup(gitsyncs client.Reader, secretOf func(context.Context, *v1.GitSync) ([]byte, bool)) func(ctx context.Context, repoURL string) []webhook.Target {
	return func(ctx context.Context, repoURL string) []webhook.Target {
		list := &v1.GitSyncList{}
		if err := gitsyncs.List(ctx, list, client.MatchingFields{v1.IndexSourceURL: repoURL}); err != nil {
			return nil
		}
		var out []webhook.Target
		for i := range list.Items {
			gs := &list.Items[i]
			if gs.Spec.Webhook == nil || gs.Spec.Suspend {
				continue
			}
			secret, ok := secretOf(ctx, gs)
			if !ok {
				continue
			}
			out = append(out, webhook.Target{
				Key:    gs.Namespace + "/" + gs.Name,
				Branch: gs.Spec.Source.Ref.Branch,
				Secret: secret,
			})
		}
		return out
	}
}

// addWebhook serves the Git webhook receiver on every replica. The leader
// enqueues the GitSync directly; a replica that is not leading (or, when
// replicas share, does not own it) annotates it with
// v1.AnnotationRequestedAt, which the owner's watch sees.
func (a *Agent) addWebhook(opts Options, m *metrics.Metrics) error {
	if opts.WebhookListener == nil && listenerOff(opts.WebhookAddr) {
		return nil
	}
	ropts := opts.Webhook
	ropts.Lookup = WebhookLookup(a.mgr.GetCache(), a.rec.WebhookSecret(opts.WebhookLookup)) // from the Secret watch
	ropts.Observe = webhookObserver(m, a.mgr.GetClient(), a.mgr.GetEventRecorder("gitsync"), clock.RealClock{})
	// A replica that is not leading forwards through a Trigger, so a burst
	// of pushes becomes one annotation patch per GitSync, not one per event.
	forward := webhook.NewTrigger()
	counted := opts.Webhook.EnqueueAt
	ropts.EnqueueAt = func(key string, at time.Time) { // at: all keys of one push share one ls-remote
		if counted != nil {
			counted(key, at)
		}
		nn, ok := controller.ParseKey(key)
		if !ok {
			return
		}
		select {
		case <-a.mgr.Elected():
			if a.rec.Owns(key) { // else another replica's share: forward
				a.rec.TriggerAt(nn, at)
				return
			}
			forward.Enqueue(key)
		default:
			forward.Enqueue(key)
		}
	}
	if err := a.mgr.Add(webhookForwarder{trigger: forward, client: a.mgr.GetClient(), log: logOf(opts, "webhook")}); err != nil {
		return err
	}
	receiver, err := webhook.NewReceiver(ropts)
	if err != nil {
		return err
	}
	return a.mgr.Add(webhookServer{srv: webhook.NewServer(opts.WebhookAddr, receiver), listener: opts.WebhookListener})
}

// webhookForwarder patches the GitSyncs a non-leading replica received
// webhooks for, so the leader's watch picks them up; it runs on every replica.
type webhookForwarder struct {
	trigger *webhook.Trigger
	client  client.Client
	log     logr.Logger
}

func (f webhookForwarder) NeedLeaderElection() bool { return false }

func (f webhookForwarder) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-f.trigger.Ready():
		}
		for _, key := range f.trigger.Take() {
			nn, _ := controller.ParseKey(key)
			reqCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := RequestReconcile(reqCtx, f.client, nn); err != nil {
				f.log.Error(err, "forward webhook to the leader", "gitsync", key)
			}
			cancel()
		}
	}
}

// webhookServer runs the receiver on every replica, leader or not.
type webhookServer struct {
	srv      *http.Server
	listener net.Listener // nil: listen on srv.Addr
}

func (w webhookServer) NeedLeaderElection() bool { return false }

func (w webhookServer) Start(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() {
		if w.listener != nil {
			errc <- w.srv.Serve(w.listener)
			return
		}
		errc <- w.srv.ListenAndServe()
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("webhook listener %s: %w", w.srv.Addr, err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return w.srv.Shutdown(sctx)
	}
}

// RequestReconcile sets v1.AnnotationRequestedAt on the GitSync key to now,
// which makes the agent that owns it reconcile it with a fresh look at its
// remote. Replicas that do not lead (or own it) forward webhooks so.
func RequestReconcile(ctx context.Context, c client.Client, key types.NamespacedName) error {
	gs := &v1.GitSync{}
	gs.Name, gs.Namespace = key.Name, key.Namespace
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1.AnnotationRequestedAt, time.Now().UTC().Format(time.RFC3339Nano)))
	return c.Patch(ctx, gs, client.RawPatch(types.MergePatchType, patch))
}
