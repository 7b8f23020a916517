package controller_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncagent "gitsync.dev/gitsync/agent"
	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/controller"
	"gitsync.dev/gitsync/source/git"
)

// countingReader counts the Gets that reach the apiserver through it.
type countingReader struct {
	client.Reader
	gets atomic.Int32
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestWebhookLookupReusesSecretReads: a burst of webhook calls for a known
// repository (signed or not: lookup runs before verification) reads the
// GitSync's Secret once per TTL, and a rotated secret is seen after it.
func TestWebhookLookupReusesSecretReads(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	informers, err := cache.New(env.Config, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := informers.IndexField(ctx, &v1.GitSync{}, v1.IndexSourceURL, func(o client.Object) []string {
		return []string{git.NormalizeRepoURL(o.(*v1.GitSync).Spec.Source.URL)}
	}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: ns}, StringData: map[string]string{controller.WebhookSecretKey: "first"}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	url := "https://git.example.com/org/app.git"
	gs := newGitSync(ns, "app", url, func(g *v1.GitSync) {
		g.Spec.Webhook = &v1.WebhookSpec{SecretRef: v1.LocalObjectReference{Name: "hook"}}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}

	reader := &countingReader{Reader: env.Client}
	clk := clocktesting.NewFakePassiveClock(time.Now())
	lookup := gitsyncagent.WebhookLookup(informers, controller.WebhookSecretReader(reader, controller.WebhookLookupOptions{SecretTTL: 30 * time.Second, Clock: clk}))
	key := git.NormalizeRepoURL(url)
	eventually(t, "GitSync in the informer cache", func(ctx context.Context) (bool, error) {
		return len(lookup(ctx, key)) == 1, nil
	})
	reader.gets.Store(0)

	for range 50 {
		targets := lookup(ctx, key)
		if len(targets) != 1 || string(targets[0].Secret) != "first" || targets[0].Key != ns+"/app" {
			t.Fatalf("lookup = %+v, want one target with the first secret", targets)
		}
	}
	if n := reader.gets.Load(); n != 0 {
		t.Errorf("50 lookups within the TTL read the Secret %d times, want 0 (cached)", n)
	}

	secret.StringData = map[string]string{controller.WebhookSecretKey: "rotated"}
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if got := string(lookup(ctx, key)[0].Secret); got != "first" {
		t.Errorf("within the TTL the cached secret is used, got %q", got)
	}
	clk.SetTime(clk.Now().Add(31 * time.Second))
	if got := string(lookup(ctx, key)[0].Secret); got != "rotated" {
		t.Errorf("after the TTL the rotated secret should be read, got %q", got)
	}
	if n := reader.gets.Load(); n != 1 {
		t.Errorf("Secret reads = %d, want 1 (one per TTL)", n)
	}
	if targets := lookup(ctx, "git.example.com/org/other"); len(targets) != 0 {
		t.Errorf("unknown repository matched %+v", targets)
	}
}
