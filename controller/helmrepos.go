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
	acc, err := prepare.ChartAccess(ctx, gs, func(ctx context.Context, name, field string) (map[string][]byte, error) {
		s, err := view.Secret(ctx, tenant.Ref{Name: name, Field: field})
		if err != nil {
			return nil, err
		}
		return s.Data, nil
	})
	if err != nil {
		return acc, classifyPrepare(err, v1.ReasonRenderFailed)
	}
	return acc, nil
}
