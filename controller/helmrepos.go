package controller

import (
	"context"
	"fmt"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/chartrepo"
	"gitsync.dev/gitsync/tenant"
)

// chartAccess reads the credentials of gs's chart repositories
// (spec.helm.repositories) through the tenant view, which knows every
// value for the redactor. A Secret that cannot be read, or lacks the keys,
// fails the sync before anything is downloaded or applied.
func chartAccess(ctx context.Context, gs *v1.GitSync, view *tenant.View) (chartrepo.Access, error) {
	var acc chartrepo.Access
	if gs.Spec.Helm == nil {
		return acc, nil
	}
	for i, repo := range gs.Spec.Helm.Repositories {
		field := fmt.Sprintf("spec.helm.repositories[%d].secretRef", i)
		name := repo.SecretRef.Name
		secret, err := view.Secret(ctx, tenant.Ref{Name: name, Field: field})
		if err != nil {
			return acc, classifyRead(fmt.Errorf("Secret/%s/%s read failed: %w", gs.Namespace, name, err), v1.ReasonRenderFailed)
		}
		r, err := chartrepo.FromSecret(repo.URL, fmt.Sprintf("Secret/%s/%s (%s)", gs.Namespace, name, field), secret.Data)
		if err != nil {
			return acc, stalled(v1.ReasonInvalidSpec, err)
		}
		acc.Repositories = append(acc.Repositories, r)
	}
	return acc, nil
}
