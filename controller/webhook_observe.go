package controller

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/webhook"
)

// webhookEventInterval is the least time between two WebhookRejected events
// on one GitSync, so whoever can reach the webhook port cannot flood the
// events API (the metric still counts every request).
const webhookEventInterval = time.Minute

// WebhookObserver returns a webhook.Options.Observe for this agent:
// it counts every delivery in gitsync_webhook_requests_total (by provider,
// result and status code) and tells each GitSync whose repository a wrongly
// signed push named, with a Warning event at most once a minute, so a
// misconfigured secret is easy to find although the sender is told nothing.
func (r *GitSyncReconciler) WebhookObserver() func(webhook.Delivery) {
	limit := newEventLimiter(r.clock, webhookEventInterval)
	return func(d webhook.Delivery) {
		r.opts.Metrics.ObserveWebhook(d.Provider, string(d.Result), d.Code)
		for _, key := range d.Rejected {
			nn, ok := ParseKey(key)
			if !ok || !limit.allow(key) {
				continue
			}
			gs := &v1.GitSync{}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := r.client.Get(ctx, nn, gs) // the informer cache: no API request
			cancel()
			if err != nil || gs.Spec.Webhook == nil {
				continue
			}
			r.recorder.Eventf(gs, nil, corev1.EventTypeWarning, v1.ReasonWebhookRejected, "Webhook",
				"a %s push webhook for %s did not verify with the secret in Secret/%s/%s (key %q); the request was ignored",
				d.Provider, git.RedactURL(gs.Spec.Source.URL), gs.Namespace, gs.Spec.Webhook.SecretRef.Name, WebhookSecretKey)
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
