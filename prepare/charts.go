package prepare

import (
	"context"
	"fmt"
	"strings"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/chartrepo"
)

// ReadSecret returns the data of the Secret name in the GitSync's
// namespace, which field of its spec names; the reader tells its values
// to the redactor (the agent's tenant view, the CLI's user client).
type ReadSecret func(ctx context.Context, name, field string) (map[string][]byte, error)

// ChartAccess reads the credentials of gs's chart repositories
// (spec.helm.repositories), in order, the names they are given as
// aliases, and the keys their charts must be signed with. A Secret that
// cannot be read is a *ReadError; one without the keys of its repository's
// kind (or of its verify mode) a *SpecError. The agent and `diff
// --gitsync` read them through here alike.
func ChartAccess(ctx context.Context, gs *v1.GitSync, read ReadSecret) (chartrepo.Access, error) {
	var acc chartrepo.Access
	if gs.Spec.Helm == nil {
		return acc, nil
	}
	for i, repo := range gs.Spec.Helm.Repositories {
		if repo.Name != "" {
			if acc.Aliases == nil {
				acc.Aliases = map[string]string{}
			}
			acc.Aliases[repo.Name] = repo.URL
		}
		if repo.Verify != nil {
			t, err := chartTrust(ctx, gs, read, repo.URL, string(repo.Verify.Mode), repo.Verify.SecretRef.Name, fmt.Sprintf("spec.helm.repositories[%d].verify.secretRef", i))
			if err != nil {
				return acc, err
			}
			acc.Trust = append(acc.Trust, t)
		}
		if repo.SecretRef == nil {
			continue
		}
		field := fmt.Sprintf("spec.helm.repositories[%d].secretRef", i)
		subject := fmt.Sprintf("Secret/%s/%s", gs.Namespace, repo.SecretRef.Name)
		data, err := read(ctx, repo.SecretRef.Name, field)
		if err != nil {
			return acc, &ReadError{Subject: subject, Field: field, Err: err}
		}
		r, err := chartrepo.FromSecret(repo.URL, subject, data)
		if err != nil {
			return acc, &SpecError{Field: field, Err: err}
		}
		acc.Repositories = append(acc.Repositories, r)
	}
	return acc, nil
}

// chartTrust reads the keys of a repository's verification Secret (name,
// which field names); errors are as ChartAccess's.
func chartTrust(ctx context.Context, gs *v1.GitSync, read ReadSecret, url, mode, name, field string) (chartrepo.Trust, error) {
	subject := fmt.Sprintf("Secret/%s/%s", gs.Namespace, name)
	data, err := read(ctx, name, field)
	if err != nil {
		return chartrepo.Trust{}, &ReadError{Subject: subject, Field: field, Err: err}
	}
	t, err := chartrepo.NewTrust(url, mode, subject+" ("+field+")", data)
	if err != nil {
		return t, &SpecError{Field: field, Err: err}
	}
	return t, nil
}

// SourceCredentials reads the registry or chart repository credentials of
// an oci:// or chart source's spec.source.secretRef (username and
// password, or a .dockerconfigjson entry of the registry's host); nil when
// it names none. Errors are as ChartAccess's. The agent and the --gitsync
// previews read them through here alike.
func SourceCredentials(ctx context.Context, gs *v1.GitSync, read ReadSecret) (*chartrepo.Repository, error) {
	ref := gs.Spec.Source.SecretRef
	if ref == nil {
		return nil, nil
	}
	const field = "spec.source.secretRef"
	subject := fmt.Sprintf("Secret/%s/%s", gs.Namespace, ref.Name)
	data, err := read(ctx, ref.Name, field)
	if err != nil {
		return nil, &ReadError{Subject: subject, Field: field, Err: err}
	}
	r, err := chartrepo.FromSecret(strings.TrimSuffix(gs.Spec.Source.URL, "/"), subject, data)
	if err != nil {
		return nil, &SpecError{Field: field, Err: err}
	}
	return &r, nil
}

// SourceChartAccess is what a chart source (spec.source.chart) is read
// with: spec.source.secretRef's credentials and, for verify.mode
// Provenance, the OpenPGP keys of spec.source.verify.secretRef. Errors are
// as ChartAccess's. The agent's resolve and verification read it here.
func SourceChartAccess(ctx context.Context, gs *v1.GitSync, read ReadSecret) (chartrepo.Access, error) {
	var acc chartrepo.Access
	creds, err := SourceCredentials(ctx, gs, read)
	if err != nil {
		return acc, err
	}
	if creds != nil {
		acc.Repositories = []chartrepo.Repository{*creds}
	}
	if v := gs.Spec.Source.Verify; v != nil && v.Mode == v1.VerifyProvenance {
		url := strings.TrimSuffix(gs.Spec.Source.URL, "/")
		t, err := chartTrust(ctx, gs, read, url, string(v.Mode), v.SecretRef.Name, "spec.source.verify.secretRef")
		if err != nil {
			return acc, err
		}
		acc.Trust = []chartrepo.Trust{t}
	}
	return acc, nil
}
