package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

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
// is noticed. Answers that allow are remembered per GitSync and target,
// so a converged GitSync sends no review; a write refused later still
// fails its object as Forbidden and forgets them.
//
// Not checked: create, which server-side apply also needs for an object
// that does not exist yet (the apply then fails that object as Forbidden).

// accessKey is one question asked of the apiserver's authorizer.
type accessKey struct {
	verb, group, resource, namespace string
	// name narrows the question to one object; empty: any object.
	name string
}

func (k accessKey) String() string {
	res := k.resource
	if k.group != "" {
		res += "." + k.group
	}
	if k.name != "" {
		res += "/" + k.name
	}
	where := "at the cluster scope"
	if k.namespace != "" {
		where = "in namespace " + k.namespace
	}
	return fmt.Sprintf("%s %s %s", k.verb, res, where)
}

// accessMemo is what one GitSync's target was allowed to do.
type accessMemo struct {
	mu      sync.Mutex
	target  *cluster.Target
	allowed map[accessKey]bool
}

func (m *accessMemo) has(tgt *cluster.Target, k accessKey) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.target == tgt && m.allowed[k]
}

func (m *accessMemo) allow(tgt *cluster.Target, k accessKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.target != tgt {
		m.target, m.allowed = tgt, map[accessKey]bool{}
	}
	m.allowed[k] = true
}

func (m *accessMemo) forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.target, m.allowed = nil, nil
}

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
		k := accessKey{verb: "patch", group: m.Resource.Group, resource: m.Resource.Resource}
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			k.namespace = obj.GetNamespace()
			if k.namespace == "" {
				k.namespace = defaultNamespace(gs)
			}
		}
		keys = append(keys, k)
	}
	denied, err := askAccess(ctx, st, tgt, keys, v1.ReasonApplyFailed)
	if err != nil || len(denied) == 0 {
		return err
	}
	return stalled(v1.ReasonForbidden, fmt.Errorf("%s may not %s", r.writer(gs), strings.Join(denied, ", ")))
}

// askAccess reviews each distinct key tgt's memo does not already allow,
// remembers the allowed ones and returns the refused ones, sorted, each
// with the authorizer's reason. A review that fails is retried later with
// reason.
func askAccess(ctx context.Context, st *syncState, tgt *cluster.Target, keys []accessKey, reason string) ([]string, error) {
	seen := map[accessKey]bool{}
	var denied []string
	for _, k := range keys {
		if seen[k] || st.access.has(tgt, k) {
			continue
		}
		seen[k] = true
		ok, why, err := review(ctx, tgt.Client, k)
		if err != nil {
			return nil, retry(reason, fmt.Errorf("access review (%s) failed: %w", k, err))
		}
		if !ok {
			denied = append(denied, k.String()+why)
			continue
		}
		st.access.allow(tgt, k)
	}
	sort.Strings(denied)
	return denied, nil
}

// review asks the apiserver whether c's identity may do k, and why not.
func review(ctx context.Context, c client.Client, k accessKey) (bool, string, error) {
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: k.verb, Group: k.group, Resource: k.resource, Namespace: k.namespace, Name: k.name},
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

// forgetAccessOnForbidden drops what gs was allowed when an apply was
// refused anyway (a Role changed since it was asked).
func forgetAccessOnForbidden(st *syncState, err error) {
	var se *syncError
	if errors.As(err, &se) && se.Reason == v1.ReasonForbidden {
		st.access.forget()
	}
}

// preflight checks, before anything of the revision is applied, that the
// agent can read each kind of objs into tgt's watch cache and that gs's
// writer may patch it.
func (r *GitSyncReconciler) preflight(ctx context.Context, gs *v1.GitSync, st *syncState, tgt *cluster.Target, objs []*unstructured.Unstructured) error {
	var probe client.WithWatch
	if !tgt.Remote {
		probe = r.probe // a remote cache lists with the kubeconfig's identity
	}
	readErr := classifyKinds(r.kinds.Prepare(ctx, tgt.Cache, probe, objs))
	if readErr != nil && !asSyncError(readErr, "").Stalled {
		return readErr
	}
	writeErr := r.checkWrites(ctx, gs, st, tgt, objs)
	if writeErr != nil && !asSyncError(writeErr, "").Stalled {
		return writeErr
	}
	var refusals []string
	for _, err := range []error{readErr, writeErr} {
		if err != nil {
			refusals = append(refusals, err.Error())
		}
	}
	if len(refusals) == 0 {
		return nil
	}
	return stalled(v1.ReasonForbidden, fmt.Errorf("%s; nothing of this revision was applied", strings.Join(refusals, "; ")))
}
