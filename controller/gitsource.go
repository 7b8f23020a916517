package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source"
)

// Keys read from the Secret named by spec.source.secretRef.
const (
	secretUsername    = "username"
	secretPassword    = "password"
	secretBearerToken = "bearerToken"
	secretCA          = "ca.crt"
	secretIdentity    = "identity"
	secretPassphrase  = "passphrase"
	secretKnownHosts  = "known_hosts"
)

// sourceOf translates spec.source into a source.Source, reading credentials
// with reader (the apiserver directly: Secrets are not cached, and they are
// read only when the remote is asked for a new revision).
func sourceOf(ctx context.Context, reader client.Reader, gs *v1.GitSync) (source.Source, error) {
	spec := gs.Spec.Source
	src := source.Source{
		URL:  spec.URL,
		Path: spec.Path,
		Ref:  source.Ref{Branch: spec.Ref.Branch, Tag: spec.Ref.Tag, Semver: spec.Ref.Semver, Commit: spec.Ref.Commit},
	}
	if err := src.Validate(); err != nil {
		return src, stalled(v1.ReasonInvalidSpec, err)
	}
	if spec.SecretRef == nil {
		return src, nil
	}
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: gs.Namespace, Name: spec.SecretRef.Name}
	if err := reader.Get(ctx, key, secret); err != nil {
		return src, retry(v1.ReasonFetchFailed, fmt.Errorf("Secret/%s/%s read failed: %w", key.Namespace, key.Name, err))
	}
	d := secret.Data
	src.Auth = &source.Auth{
		Username:      string(d[secretUsername]),
		Password:      string(d[secretPassword]),
		BearerToken:   string(d[secretBearerToken]),
		CAData:        d[secretCA],
		SSHPrivateKey: d[secretIdentity],
		SSHPassphrase: d[secretPassphrase],
		KnownHosts:    d[secretKnownHosts],
	}
	return src, nil
}
