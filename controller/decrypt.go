package controller

import (
	"context"
	"errors"
	"fmt"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/sops"
)

// decrypt replaces the SOPS-encrypted objects of objs by decrypted copies
// (sops.Objects), with the age identities of gs's spec.decryption Secret,
// and returns the values decrypted, to keep them out of messages. Without
// spec.decryption an encrypted object is refused: it is never applied
// encrypted. A failure is Stalled DecryptionFailed naming the object and
// its file (a Secret read error is retried); nothing is applied or pruned.
func (r *GitSyncReconciler) decrypt(ctx context.Context, gs *v1.GitSync, objs []*unstructured.Unstructured, files sops.Files) ([]*unstructured.Unstructured, []string, error) {
	keys := func() ([]age.Identity, error) {
		if gs.Spec.Decryption == nil {
			return nil, errors.New("set spec.decryption to decrypt it; it is never applied encrypted")
		}
		return r.decryptionKeys(ctx, gs)
	}
	out, hidden, err := sops.Objects(objs, files, keys)
	if err != nil {
		var se *syncError
		if errors.As(err, &se) && !se.Stalled {
			return nil, nil, retry(v1.ReasonDecryptionFailed, err)
		}
		return nil, nil, stalled(v1.ReasonDecryptionFailed, err)
	}
	return out, hidden, nil
}

// decryptionKeys reads the age identities of gs's spec.decryption Secret
// through the agent's Secret watch.
func (r *GitSyncReconciler) decryptionKeys(ctx context.Context, gs *v1.GitSync) ([]age.Identity, error) {
	key := client.ObjectKey{Namespace: gs.Namespace, Name: gs.Spec.Decryption.SecretRef.Name}
	subject := fmt.Sprintf("Secret/%s/%s", key.Namespace, key.Name)
	secret := &corev1.Secret{}
	err := (secretReader{w: r.secrets, user: client.ObjectKeyFromObject(gs)}).Get(ctx, key, secret)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%s named in spec.decryption.secretRef not found", subject)
	case err != nil:
		return nil, retry(v1.ReasonDecryptionFailed, fmt.Errorf("%s read failed: %w", subject, err))
	}
	ids, err := sops.IdentitiesFromSecret(secret.Data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", subject, err)
	}
	return ids, nil
}
