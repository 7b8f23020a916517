package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// informerSyncTimeout bounds how long a reconcile waits for the first
// listing of a kind into the watch cache. A cache Get of a kind without an
// informer starts one and blocks until it has listed, which never happens
// when listing is refused: that wait held a worker for spec.timeout.
const informerSyncTimeout = 30 * time.Second

// prepare makes every kind of objs readable from c before anything is
// applied: each kind not read yet is first listed and watched once with
// probe (the agent's own identity, the one c lists with), so a refusal is
// reported at once with the apiserver's words (verb, resource, user) and
// no informer is started to retry it forever; then its informer is started
// and waited for, at most informerSyncTimeout, and stopped if it does not
// sync. A nil probe (a remote cluster) skips the first step. Kinds that are
// not served are left to the applier, which skips them and says so.
func (d *driftWatcher) prepare(ctx context.Context, c cache.Cache, probe client.WithWatch, objs []*unstructured.Unstructured) error {
	if d == nil || c == nil {
		return nil
	}
	var denied, failed []error
	seen := map[schema.GroupVersionKind]bool{}
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		key := driftKey{cache: c, gvk: gvk}
		if seen[gvk] || d.isReady(key) {
			continue
		}
		seen[gvk] = true
		// GitSyncs are cached as the manager's options say (namespaces,
		// shard), which the probe does not know; the agent reads them anyway.
		if probe != nil && gvk.GroupKind() != v1.GroupVersion.WithKind("GitSync").GroupKind() {
			err := probeRead(ctx, probe, gvk)
			switch {
			case err == nil:
			case meta.IsNoMatchError(err), apierrors.IsNotFound(err):
				continue
			case apierrors.IsForbidden(err):
				d.drop(ctx, key)
				denied = append(denied, fmt.Errorf("the agent cannot read %s into its watch cache: %w", gvk.Kind, err))
				continue
			default:
				failed = append(failed, fmt.Errorf("%s read check failed: %w", gvk.Kind, err))
				continue
			}
		}
		if err := d.startInformer(ctx, key); err != nil {
			failed = append(failed, err)
		}
	}
	switch {
	case len(denied) > 0:
		return stalled(v1.ReasonForbidden, joinErrors(denied))
	case len(failed) > 0:
		return retry(v1.ReasonApplyFailed, joinErrors(failed))
	}
	return nil
}

// probeRead lists one managed object of gvk and opens a watch from there,
// as the cache's informer would.
func probeRead(ctx context.Context, c client.WithWatch, gvk schema.GroupVersionKind) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, list, client.Limit(1), client.MatchingLabelsSelector{Selector: ManagedSelector()}); err != nil {
		return err
	}
	w, err := c.Watch(ctx, list, &client.ListOptions{
		LabelSelector: ManagedSelector(),
		Raw:           &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()},
	})
	if err != nil {
		return err
	}
	w.Stop()
	return nil
}

// startInformer starts key's informer and waits until it has listed.
func (d *driftWatcher) startInformer(ctx context.Context, key driftKey) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(key.gvk)
	inf, err := key.cache.GetInformer(ctx, u, cache.BlockUntilSynced(false))
	if err != nil {
		// Not served, or discovery failed: the applier meets the same
		// error at once and reports it per object.
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, informerSyncTimeout)
	defer cancel()
	if !toolscache.WaitForCacheSync(wctx.Done(), inf.HasSynced) {
		d.drop(ctx, key)
		return fmt.Errorf("%s watch cache did not sync within %s: check that the agent may list and watch it", key.gvk.Kind, informerSyncTimeout)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ready[key] = true
	return nil
}

func (d *driftWatcher) isReady(key driftKey) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ready[key]
}

// drop stops key's informer, if any, so a refused list is not retried
// (and logged) forever; its drift watch is registered again once the kind
// is readable.
func (d *driftWatcher) drop(ctx context.Context, key driftKey) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(key.gvk)
	_ = key.cache.RemoveInformer(ctx, u)
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.ready, key)
	delete(d.watched, key)
}

// joinErrors joins errs on one line, for a condition message; errors.Is
// and errors.As still see each of them.
func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return oneLine(errs)
}

type oneLine []error

func (e oneLine) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e oneLine) Unwrap() []error { return e }
