package controller

import (
	"context"
	"fmt"
	"strings"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// checkReads keeps spec.substituteFrom and spec.decryption from reading
// more than the GitSync's ServiceAccount may. The agent reads those
// ConfigMaps and Secrets with its own identity and puts what they hold into
// objects it applies, so without this check a tenant allowed to create
// GitSyncs, but not to read a Secret of the namespace, could name that
// Secret in substituteFrom and read its values back from a ConfigMap.
// With spec.serviceAccountName the account must be allowed to get each
// named object (asked with a SelfSubjectAccessReview as the account, the
// answer remembered like checkWrites'); a refusal stalls the GitSync as
// Forbidden before anything is read. Without an account the objects are
// written with the agent's own rights, so the namespace is the boundary
// (README, "Variable substitution"); a remote target (spec.kubeConfig) has
// no local account to ask.
func (r *GitSyncReconciler) checkReads(ctx context.Context, gs *v1.GitSync, st *syncState, tgt *target) error {
	if gs.Spec.ServiceAccountName == "" || gs.Spec.KubeConfig != nil {
		return nil
	}
	var keys []accessKey
	for _, ref := range gs.Spec.SubstituteFrom {
		res := "configmaps"
		if ref.Kind == "Secret" {
			res = "secrets"
		}
		keys = append(keys, accessKey{verb: "get", resource: res, namespace: gs.Namespace, name: ref.Name})
	}
	if d := gs.Spec.Decryption; d != nil {
		keys = append(keys, accessKey{verb: "get", resource: "secrets", namespace: gs.Namespace, name: d.SecretRef.Name})
	}
	denied, err := askAccess(ctx, st, tgt, keys, v1.ReasonSubstitutionFailed) // access.go
	if err != nil || len(denied) == 0 {
		return err
	}
	return stalled(v1.ReasonForbidden, fmt.Errorf("%s may not %s, which spec.substituteFrom or spec.decryption name: the agent reads them only for an account allowed to", r.writer(gs), strings.Join(denied, ", ")))
}
