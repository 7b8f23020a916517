package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source"
)

// URLIndex is the field index of GitSyncs by normalised source URL
// (source.NormalizeRepoURL), so a webhook finds its GitSyncs without a scan.
const URLIndex = "gitsync.dev/normalized-url"

// WebhookSecretKey is the key of the webhook Secret that holds the shared
// secret (HMAC key, or GitLab token).
const WebhookSecretKey = "token"

// IndexByURL registers URLIndex with mgr's cache.
func IndexByURL(ctx context.Context, mgr manager.Manager) error {
	return mgr.GetFieldIndexer().IndexField(ctx, &v1.GitSync{}, URLIndex, func(obj client.Object) []string {
		gs := obj.(*v1.GitSync)
		if gs.Spec.Webhook == nil {
			return nil
		}
		return []string{source.NormalizeRepoURL(gs.Spec.Source.URL)}
	})
}

// WebhookLookup returns a source.ReceiverOptions.Lookup: the GitSyncs with
// a webhook whose source URL normalises to repoURL, found through URLIndex
// in gitsyncs (the manager's cache), with their secret read from secrets.
// Secrets are read with one GET per verified-URL match instead of a
// cluster-wide Secret informer, which would hold every Secret in memory.
func WebhookLookup(gitsyncs, secrets client.Reader) func(ctx context.Context, repoURL string) []source.WebhookTarget {
	return func(ctx context.Context, repoURL string) []source.WebhookTarget {
		list := &v1.GitSyncList{}
		if err := gitsyncs.List(ctx, list, client.MatchingFields{URLIndex: repoURL}); err != nil {
			return nil
		}
		var out []source.WebhookTarget
		for i := range list.Items {
			gs := &list.Items[i]
			if gs.Spec.Webhook == nil || gs.Spec.Suspend {
				continue
			}
			s := &corev1.Secret{}
			if err := secrets.Get(ctx, client.ObjectKey{Namespace: gs.Namespace, Name: gs.Spec.Webhook.SecretRef.Name}, s); err != nil {
				continue
			}
			out = append(out, source.WebhookTarget{
				Key:    gs.Namespace + "/" + gs.Name,
				Branch: gs.Spec.Source.Ref.Branch,
				Secret: s.Data[WebhookSecretKey],
			})
		}
		return out
	}
}

// ParseKey parses the "namespace/name" keys WebhookLookup hands out.
func ParseKey(key string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(key, "/")
	return types.NamespacedName{Namespace: ns, Name: name}, ok && ns != "" && name != ""
}

// RequestReconcile sets RequestedAtAnnotation on the GitSync key to now,
// which makes the leading agent reconcile it with a fresh look at its
// remote. Replicas that do not lead use it to forward webhooks.
func RequestReconcile(ctx context.Context, c client.Client, key types.NamespacedName) error {
	gs := &v1.GitSync{}
	gs.Name, gs.Namespace = key.Name, key.Namespace
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, RequestedAtAnnotation, time.Now().UTC().Format(time.RFC3339Nano)))
	return c.Patch(ctx, gs, client.RawPatch(types.MergePatchType, patch))
}
