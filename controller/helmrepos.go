package controller

import (
	"context"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/prepare"
	"gitsync.dev/gitsync/source/chartrepo"
	"gitsync.dev/gitsync/tenant"
)

// chartAccess reads the credentials of gs's chart repositories
// (spec.helm.repositories) through the tenant view, which knows every
// value for the redactor. A Secret that cannot be read, or lacks the keys,
// fails the sync before anything is downloaded or applied.
func chartAccess(ctx context.Context, gs *v1.GitSync, view *tenant.View) (chartrepo.Access, error) {
	acc, err := prepare.ChartAccess(ctx, gs, secretData(view))
	if err != nil {
		return acc, classifyPrepare(err, v1.ReasonRenderFailed)
	}
	return acc, nil
}

// sourceCredentials reads an oci:// or chart source's spec.source.secretRef
// through the tenant view (prepare.SourceCredentials); nil when it names
// none.
func sourceCredentials(ctx context.Context, gs *v1.GitSync, view *tenant.View) (*chartrepo.Repository, error) {
	creds, err := prepare.SourceCredentials(ctx, gs, secretData(view))
	if err != nil {
		return nil, classifyPrepare(err, v1.ReasonFetchFailed)
	}
	return creds, nil
}

// secretData reads the Secrets a GitSync names through its tenant view,
// which tells their values to the sync's redactor.
func secretData(view *tenant.View) prepare.ReadSecret {
	return func(ctx context.Context, name, field string) (map[string][]byte, error) {
		s, err := view.Secret(ctx, tenant.Ref{Name: name, Field: field})
		if err != nil {
			return nil, err
		}
		return s.Data, nil
	}
}
