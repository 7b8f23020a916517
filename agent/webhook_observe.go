package agent

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/controller"
	"gitsync.dev/gitsync/metrics"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/webhook"
)

// webhookEventInterval is the least time between two WebhookRejected events
// on one GitSync, so whoever can reach the webhook port cannot flood the
// events API (the metric still counts every request).
const webhookEventInterval = time.Minute

// webhookObserver returns the receiver's webhook.Options.Observe: it
// counts every delivery in gitsync_webhook_requests_total (by provider,
// result and status code) and tells each GitSync whose repository a wrongly
// signed push named, with a Warning event at most once a minute, so a
// misconfigured secret is easy to find although the sender is told nothing.
// GitSyncs are read from gitsyncs, the informer cache: no API request.
func webhookObserver(m *metrics.Metrics, gitsyncs client.Reader, recorder events.EventRecorder, clk clock.PassiveClock) func(webhook.Delivery) {
	limit := newEventLimiter(clk, webhookEventInterval)
	return func(d webhook.Delivery) {
		m.ObserveWebhook(d.Provider, string(d.Result), d.Code)
		for _, key := range d.Rejected {
			nn, ok := controller.ParseKey(key)
			if !ok || !limit.allow(key) {
				continue
			}
			gs := &v1.GitSync{}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := gitsyncs.Get(ctx, nn, gs)
			cancel()
			if err != nil || gs.Spec.Webhook == nil {
				continue
			}
			recorder.Eventf(gs, nil, corev1.EventTypeWarning, v1.ReasonWebhookRejected, "Webhook",
				"a %s push webhook for %s did not verify with the secret in Secret/%s/%s (key %q); the request was ignored",
				d.Provider, git.RedactURL(gs.Spec.Source.URL), gs.Namespace, gs.Spec.Webhook.SecretRef.Name, controller.WebhookSecretKey)
		}
	}
}

// eventLimiter allows one event per key per interval. It holds only keys
// seen within the last interval, dropping the others as it goes.
type eventLimiter struct {
	clock    clock.PassiveClock
	interval time.Duration
	mu       sync.Mutex
	last     map[string]time.Time
}

func newEventLimiter(clk clock.PassiveClock, interval time.Duration) *eventLimiter {
	return &eventLimiter{clock: clk, interval: interval, last: map[string]time.Time{}}
}

// allow reports whether key may have an event now, and if so starts its interval.
func (l *eventLimiter) allow(key string) bool {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if at, ok := l.last[key]; ok && now.Sub(at) < l.interval {
		return false
	}
	for k, at := range l.last {
		if now.Sub(at) >= l.interval {
			delete(l.last, k)
		}
	}
	l.last[key] = now
	return true
}
