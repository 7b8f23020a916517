package main

import (
	"context"
	"fmt"
	"os"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/prepare"
	"gitsync.dev/gitsync/source/sops"
)

// prepareGitSync substitutes and decrypts objs as the agent does for gs:
// with its spec.substitute and spec.substituteFrom, its substituteStrict,
// and the age keys of its spec.decryption Secret, each object they name
// read with the user's own identity (the CLI has no other; a user who may
// not read the Secret gets the apiserver's refusal, never the agent's
// rights). The flags, when given, stand in for them instead: any
// substitution flag replaces the GitSync's variables, --age-key-file (or
// $SOPS_AGE_KEY_FILE) its key. Every value read from a Secret is told to the
// process's redactor first, so it is printed as *** wherever it lands.
func (f *prepareFlags) prepareGitSync(ctx context.Context, user *connectedCluster, gs *gitsyncv1.GitSync, objs []*unstructured.Unstructured, files sops.Files) ([]*unstructured.Unstructured, error) {
	in, used, err := f.inputs()
	if err != nil {
		return nil, err
	}
	if !used {
		in.Strict = prepare.Strict(gs)
		if in.Variables, err = prepare.Variables(ctx, gs, func(ctx context.Context, i int, ref gitsyncv1.SubstituteReference) (map[string]string, error) {
			return userVariables(ctx, user, gs.Namespace, ref)
		}); err != nil {
			return nil, fmt.Errorf("GitSync/%s/%s: %w", gs.Namespace, gs.Name, err)
		}
	}
	if len(f.AgeKeyFiles) == 0 && os.Getenv("SOPS_AGE_KEY_FILE") == "" && gs.Spec.Decryption != nil {
		in.Keys = func() ([]age.Identity, error) { return userDecryptionKeys(ctx, user, gs) }
	}
	return prepare.Objects(objs, files, in)
}

// userSecret reads a Secret a GitSync names, as the user (the CLI has no
// other identity), and tells the process's redactor its values before
// anything can print them: the CLI's one way to read one.
func userSecret(ctx context.Context, user *connectedCluster, ns, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := user.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		return nil, err
	}
	sensitive.AddData(s.Data)
	return s, nil
}

// userVariables reads the ConfigMap or Secret one spec.substituteFrom entry
// names, as the user.
func userVariables(ctx context.Context, user *connectedCluster, ns string, ref gitsyncv1.SubstituteReference) (map[string]string, error) {
	key := client.ObjectKey{Namespace: ns, Name: ref.Name}
	if ref.Kind == "Secret" {
		s, err := userSecret(ctx, user, ns, ref.Name)
		if err != nil {
			return nil, err
		}
		out := make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			out[k] = string(v)
		}
		return out, nil
	}
	cm := &corev1.ConfigMap{}
	if err := user.Client.Get(ctx, key, cm); err != nil {
		return nil, err
	}
	return cm.Data, nil
}

// userDecryptionKeys reads the age identities of gs's spec.decryption
// Secret, as the user.
func userDecryptionKeys(ctx context.Context, user *connectedCluster, gs *gitsyncv1.GitSync) ([]age.Identity, error) {
	subject := fmt.Sprintf("Secret/%s/%s (spec.decryption.secretRef)", gs.Namespace, gs.Spec.Decryption.SecretRef.Name)
	s, err := userSecret(ctx, user, gs.Namespace, gs.Spec.Decryption.SecretRef.Name)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%s not found", subject)
	case err != nil:
		return nil, fmt.Errorf("%s read failed: %w", subject, err)
	}
	ids, err := sops.IdentitiesFromSecret(s.Data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", subject, err)
	}
	return ids, nil
}
