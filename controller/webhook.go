package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/webhook"
	"gitsync.dev/gitsync/tenant"
)

// WebhookSecretKey is the key of the webhook Secret that holds the shared
// secret (HMAC key, or GitLab token).
const WebhookSecretKey = "token"

// IndexByURL registers v1.IndexSourceURL with mgr's cache.
func IndexByURL(ctx context.Context, mgr manager.Manager) error {
	return mgr.GetFieldIndexer().IndexField(ctx, &v1.GitSync{}, v1.IndexSourceURL, func(obj client.Object) []string {
		gs := obj.(*v1.GitSync)
		if gs.Spec.Webhook == nil {
			return nil
		}
		return []string{git.NormalizeRepoURL(gs.Spec.Source.URL)}
	})
}

// WebhookLookupOptions configure WebhookLookup.
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

// WebhookLookup returns a webhook.Options.Lookup: the GitSyncs with
// a webhook whose source URL normalises to repoURL, found through v1.IndexSourceURL
// in gitsyncs (the manager's cache), with their secret read from secrets.
// Secrets are read with one GET per Secret and TTL, concurrent lookups
// sharing it, instead of a cluster-wide Secret informer, which would hold
// every Secret in memory. The agent uses the reconciler's WebhookLookup,
// which reads them from its Secret watch instead.
func WebhookLookup(gitsyncs, secrets client.Reader, opts WebhookLookupOptions) func(ctx context.Context, repoURL string) []webhook.Target {
	cache := newSecretCache(secrets, opts)
	return webhookLookup(gitsyncs, func(ctx context.Context, _ *v1.GitSync, key types.NamespacedName) ([]byte, bool) {
		return cache.get(ctx, key)
	})
}

// WebhookLookup is the agent's webhook.Options.Lookup: like the
// package's WebhookLookup, but webhook Secrets are served by the agent's
// Secret watch (secretwatch.go), so requests to the webhook port, signed or
// not, cause no API request once a Secret's watch has synced, and a
// rotated secret is used as soon as the watch sees it. Where the agent may
// not list and watch a Secret, it is read with one GET per
// opts.SecretTTL, concurrent lookups sharing it.
func (r *GitSyncReconciler) WebhookLookup(gitsyncs client.Reader, opts WebhookLookupOptions) func(ctx context.Context, repoURL string) []webhook.Target {
	refused := newSecretCache(r.apiReader, opts)
	return webhookLookup(gitsyncs, func(ctx context.Context, gs *v1.GitSync, key types.NamespacedName) ([]byte, bool) {
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
	})
}

// webhookLookup finds the webhook GitSyncs of a repository URL through
// v1.IndexSourceURL and reads each one's secret with secretOf.
func webhookLookup(gitsyncs client.Reader, secretOf func(context.Context, *v1.GitSync, types.NamespacedName) ([]byte, bool)) func(ctx context.Context, repoURL string) []webhook.Target {
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
			secret, ok := secretOf(ctx, gs, types.NamespacedName{Namespace: gs.Namespace, Name: gs.Spec.Webhook.SecretRef.Name})
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

// RequestReconcile sets v1.AnnotationRequestedAt on the GitSync key to now,
// which makes the leading agent reconcile it with a fresh look at its
// remote. Replicas that do not lead use it to forward webhooks.
func RequestReconcile(ctx context.Context, c client.Client, key types.NamespacedName) error {
	gs := &v1.GitSync{}
	gs.Name, gs.Namespace = key.Name, key.Namespace
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1.AnnotationRequestedAt, time.Now().UTC().Format(time.RFC3339Nano)))
	return c.Patch(ctx, gs, client.RawPatch(types.MergePatchType, patch))
}
