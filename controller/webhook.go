package controller

import (
	"context"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/tenant"
)

// WebhookSecretKey is the key of the webhook Secret that holds the shared
// secret (HMAC key, or GitLab token).
const WebhookSecretKey = "token"

// WebhookLookupOptions configure how webhook Secrets are read with GETs
// (WebhookSecretReader, and WebhookSecret where watching is refused).
type WebhookLookupOptions struct {
	// SecretTTL is how long a webhook Secret read is reused. Lookup runs
	// before a signature can be checked, so without it every unauthenticated
	// POST naming a known repository would cost an API read per GitSync; a
	// rotated secret takes effect within the TTL.
	SecretTTL time.Duration
	// Clock reads the time for the TTL; a fake clock in tests.
	Clock clock.PassiveClock
}

// DefaultWebhookLookupOptions reuses a Secret read for 30 seconds.
func DefaultWebhookLookupOptions() WebhookLookupOptions {
	return WebhookLookupOptions{SecretTTL: 30 * time.Second, Clock: clock.RealClock{}}
}

// WebhookSecretReader returns how a webhook GitSync's secret is read with
// one GET per Secret and opts.SecretTTL over secrets, concurrent reads
// sharing it, instead of a cluster-wide Secret informer, which would hold
// every Secret in memory. The agent uses the reconciler's WebhookSecret,
// which reads them from its Secret watch instead.
func WebhookSecretReader(secrets client.Reader, opts WebhookLookupOptions) func(context.Context, *v1.GitSync) ([]byte, bool) {
	cache := newSecretCache(secrets, opts)
	return func(ctx context.Context, gs *v1.GitSync) ([]byte, bool) {
		return cache.get(ctx, webhookSecretKey(gs))
	}
}

// WebhookSecret is how the agent's webhook lookup reads a GitSync's
// secret: from the agent's Secret watch, so requests to the webhook port,
// signed or not, cause no API request once a Secret's watch has synced,
// and a rotated secret is used as soon as the watch sees it. Where the
// agent may not list and watch a Secret, it is read with one GET per
// opts.SecretTTL, concurrent lookups sharing it.
func (r *GitSyncReconciler) WebhookSecret(opts WebhookLookupOptions) func(context.Context, *v1.GitSync) ([]byte, bool) {
	refused := newSecretCache(r.apiReader, opts)
	return func(ctx context.Context, gs *v1.GitSync) ([]byte, bool) {
		key := webhookSecretKey(gs)
		view := r.reader.For(gs, nil)
		ref := tenant.Ref{Kind: tenant.KindSecret, Name: key.Name, Field: "spec.webhook.secretRef"}
		if r.reader.Refused(tenant.KindSecret, key) {
			// GETs, cached: a request to the webhook port is not one GET
			// per GitSync; the account is asked (and the answer kept) all
			// the same.
			if view.Allowed(ctx, ref) != nil {
				return nil, false
			}
			return refused.get(ctx, key)
		}
		s, err := view.Secret(ctx, ref)
		if err != nil {
			return nil, false
		}
		return s.Data[WebhookSecretKey], true
	}
}

func webhookSecretKey(gs *v1.GitSync) types.NamespacedName {
	return types.NamespacedName{Namespace: gs.Namespace, Name: gs.Spec.Webhook.SecretRef.Name}
}

// secretCache remembers webhook secrets (and their absence) for a TTL;
// concurrent reads of one Secret share one GET. It holds at most one entry
// per Secret some webhook GitSync names, and drops expired entries as it
// goes.
type secretCache struct {
	reader  client.Reader
	opts    WebhookLookupOptions
	group   singleflight.Group
	mu      sync.Mutex
	entries map[types.NamespacedName]cachedSecret
}

type cachedSecret struct {
	value   []byte
	found   bool
	fetched time.Time
}

func newSecretCache(reader client.Reader, opts WebhookLookupOptions) *secretCache {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &secretCache{reader: reader, opts: opts, entries: map[types.NamespacedName]cachedSecret{}}
}

func (c *secretCache) get(ctx context.Context, key types.NamespacedName) ([]byte, bool) {
	now := c.opts.Clock.Now()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Sub(e.fetched) < c.opts.SecretTTL {
		return e.value, e.found
	}
	v, err, _ := c.group.Do(key.String(), func() (any, error) {
		s := &corev1.Secret{}
		err := c.reader.Get(ctx, key, s)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err // transient: ask again next time
		}
		e := cachedSecret{value: s.Data[WebhookSecretKey], found: err == nil, fetched: now}
		c.remember(key, e)
		return e, nil
	})
	if err != nil {
		return nil, false
	}
	e = v.(cachedSecret)
	return e.value, e.found
}

func (c *secretCache) remember(key types.NamespacedName, e cachedSecret) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, old := range c.entries {
		if e.fetched.Sub(old.fetched) >= c.opts.SecretTTL {
			delete(c.entries, k)
		}
	}
	c.entries[key] = e
}

// ParseKey parses the "namespace/name" keys WebhookLookup hands out.
func ParseKey(key string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(key, "/")
	return types.NamespacedName{Namespace: ns, Name: name}, ok && ns != "" && name != ""
}
