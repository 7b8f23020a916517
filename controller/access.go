package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/cluster"
)

// Before the first object of a revision is applied, the reconciler makes
// sure the whole revision can be: that the agent can read every kind into
// its watch cache (livecache.Kinds.Prepare) and that the identity writing — the
// impersonated ServiceAccount, else the agent — may patch every kind where
// the revision puts it, asked with a SelfSubjectAccessReview. A refusal
// stalls the GitSync as Forbidden, naming verb, resource and identity,
// before anything of the revision is applied; it is asked again at the
// next reconcile (spec.interval, a new commit, requested-at), so a grant
// is noticed. Answers that allow are remembered per identity and cluster
// (cluster.Allowed), shared by the GitSyncs writing as that identity, so a
// converged GitSync sends no review and a restarted agent asks each
// question once, not once per GitSync; a write refused later still fails
// its object as Forbidden and forgets them for all of those GitSyncs.
//
// Not checked: create, which server-side apply also needs for an object
// that does not exist yet (the apply then fails that object as Forbidden).

// accessKey is one question asked of the apiserver's authorizer.
type accessKey = cluster.Access

// checkWrites asks, for each kind and namespace of objs, whether tgt's
// identity may patch there. Kinds the mapper does not know are left to the
// applier (their CRD may be in objs).
func (r *GitSyncReconciler) checkWrites(ctx context.Context, gs *v1.GitSync, st *syncState, tgt *cluster.Target, objs []*unstructured.Unstructured) error {
	mapper := tgt.Client.RESTMapper()
	var keys []accessKey
	for _, obj := range objs {
		m, err := mapper.RESTMapping(obj.GroupVersionKind().GroupKind(), obj.GroupVersionKind().Version)
		if err != nil {
			continue
		}
		k := accessKey{Verb: "patch", Group: m.Resource.Group, Resource: m.Resource.Resource}
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			k.Namespace = obj.GetNamespace()
			if k.Namespace == "" {
				k.Namespace = defaultNamespace(gs)
			}
		}
		keys = append(keys, k)
	}
	denied, err := askAccess(ctx, tgt, keys, v1.ReasonApplyFailed)
	if err != nil || len(denied) == 0 {
		return err
	}
	return stalled(v1.ReasonForbidden, fmt.Errorf("%s may not %s", r.writer(gs), strings.Join(denied, ", ")))
}

// askAccess reviews each distinct key tgt's identity is not already
// allowed, remembers the allowed ones and returns the refused ones,
// sorted, each with the authorizer's reason. A review that fails is
// retried later with reason.
func askAccess(ctx context.Context, tgt *cluster.Target, keys []accessKey, reason string) ([]string, error) {
	seen := map[accessKey]bool{}
	var denied []string
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		ok, why, err := tgt.Allowed.Check(k, func() (bool, string, error) { return review(ctx, tgt.Client, k) })
		if err != nil {
			return nil, retry(reason, fmt.Errorf("access review (%s) failed: %w", k, err))
		}
		if !ok {
			denied = append(denied, k.String()+why)
		}
	}
	sort.Strings(denied)
	return denied, nil
}

// review asks the apiserver whether c's identity may do k, and why not.
func review(ctx context.Context, c client.Client, k accessKey) (bool, string, error) {
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: k.Verb, Group: k.Group, Resource: k.Resource, Namespace: k.Namespace, Name: k.Name},
	}}
	if err := c.Create(ctx, ssar); err != nil {
		return false, "", err
	}
	why := ""
	if r := strings.TrimSpace(ssar.Status.Reason); r != "" && !ssar.Status.Allowed {
		why = " (" + r + ")"
	}
	return ssar.Status.Allowed, why, nil
}

// writer names the identity gs's objects are written as.
func (r *GitSyncReconciler) writer(gs *v1.GitSync) string {
	def := r.opts.DefaultServiceAccount
	if gs.Spec.KubeConfig != nil {
		def = "" // a remote cluster is written as its kubeconfig says
	}
	if user, origin := gs.AccountOrigin(def); user != "" {
		return fmt.Sprintf("ServiceAccount %s (%s)", user, origin)
	}
	switch {
	case gs.Spec.KubeConfig != nil:
		return "the identity of the kubeconfig in Secret " + gs.Namespace + "/" + gs.Spec.KubeConfig.SecretRef.Name
	case r.opts.AgentServiceAccount != "":
		return fmt.Sprintf("the agent (system:serviceaccount:%s:%s)", r.opts.AgentNamespace, r.opts.AgentServiceAccount)
	}
	return "the agent"
}

// forgetAccessOnForbidden drops what tgt's identity was allowed when an
// apply was refused anyway (a Role changed since it was asked).
func forgetAccessOnForbidden(tgt *cluster.Target, err error) {
	var se *syncError
	if errors.As(err, &se) && se.Reason == v1.ReasonForbidden {
		tgt.Allowed.Forget()
	}
}

// preflight checks, before anything of the revision is applied, that the
// agent can read each kind of objs into tgt's watch cache and that gs's
// writer may patch it.
//
// It returns what the sync reads current objects through: the watch cache,
// or, while kinds of objs are still being listed into it (a restart, a new
// kind), a livecache.Reader that reads those kinds' objects of the sync's
// namespaces directly, so the first sync after a restart does not wait for
// the listing of every managed object. A remote cache is waited for.
func (r *GitSyncReconciler) preflight(ctx context.Context, gs *v1.GitSync, st *syncState, tgt *cluster.Target, objs []*unstructured.Unstructured) (client.Reader, error) {
	var live client.Reader = tgt.Cache
	var readErr error
	if tgt.Remote {
		readErr = r.kinds.Prepare(ctx, tgt.Cache, nil, objs) // a remote cache lists with the kubeconfig's identity
	} else {
		listing, err := r.kinds.Start(ctx, tgt.Cache, r.probe, objs)
		if readErr = err; listing {
			live = r.kinds.Reader(tgt.Cache, r.probe)
		}
	}
	readErr = classifyKinds(readErr)
	if readErr != nil && !asSyncError(readErr, "").Stalled {
		return nil, readErr
	}
	writeErr := r.checkWrites(ctx, gs, st, tgt, objs)
	if writeErr != nil && !asSyncError(writeErr, "").Stalled {
		return nil, writeErr
	}
	var refusals []string
	for _, err := range []error{readErr, writeErr} {
		if err != nil {
			refusals = append(refusals, err.Error())
		}
	}
	if len(refusals) == 0 {
		return live, nil
	}
	return nil, stalled(v1.ReasonForbidden, fmt.Errorf("%s; nothing of this revision was applied", strings.Join(refusals, "; ")))
}
