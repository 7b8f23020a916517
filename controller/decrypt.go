package controller

import (
	"context"
	"fmt"
	"slices"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/source/sops"
)

// encryptedFiles finds the SOPS file an object was rendered from by the
// mac its sops metadata carries; the render keeps the bytes of every file
// that holds SOPS documents (still encrypted, so the shared cache holds no
// plaintext). nil finds nothing.
type encryptedFiles func(mac string) (path string, data []byte, ok bool)

// decrypt replaces the SOPS-encrypted objects of objs by decrypted copies,
// with the age identities of gs's spec.decryption Secret, and returns the
// values decrypted (to keep them out of messages). Without
// spec.decryption an encrypted object is refused: it is never applied
// encrypted. Every failure is Stalled DecryptionFailed naming the file and
// the object; nothing is applied or pruned then.
func (r *GitSyncReconciler) decrypt(ctx context.Context, gs *v1.GitSync, objs []*unstructured.Unstructured, files encryptedFiles) ([]*unstructured.Unstructured, []string, error) {
	var ids []age.Identity
	plains := map[string]*sops.Plaintext{} // by mac
	var hidden []string
	out, cloned := objs, false
	for i, obj := range objs {
		mac := sops.MACOf(obj)
		if mac == "" {
			continue
		}
		id := inventory.IDOf(obj)
		path, data, found := "", []byte(nil), false
		if files != nil {
			path, data, found = files(mac)
		}
		from := ""
		if found {
			from = " (" + path + ")"
		}
		if gs.Spec.Decryption == nil {
			return nil, nil, stalled(v1.ReasonDecryptionFailed, fmt.Errorf("%s%s is SOPS-encrypted and spec.decryption is not set: it is never applied encrypted", id, from))
		}
		if !found {
			return nil, nil, stalled(v1.ReasonDecryptionFailed, fmt.Errorf("%s is SOPS-encrypted but was not read from a SOPS file of the repository (a generated or changed object)", id))
		}
		if ids == nil {
			var err error
			if ids, err = r.decryptionKeys(ctx, gs); err != nil {
				return nil, nil, err
			}
		}
		p := plains[mac]
		if p == nil {
			var err error
			if p, err = sops.Decrypt(path, data, ids); err != nil {
				return nil, nil, stalled(v1.ReasonDecryptionFailed, fmt.Errorf("%s: %w", id, err))
			}
			plains[mac] = p
			hidden = append(hidden, p.Strings()...)
		}
		plain, _, err := p.Object(obj)
		if err != nil {
			return nil, nil, stalled(v1.ReasonDecryptionFailed, fmt.Errorf("%s: %w", id, err))
		}
		if !cloned {
			out, cloned = slices.Clone(objs), true // objs may be the render cache's slice
		}
		out[i] = plain
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
		return nil, stalled(v1.ReasonDecryptionFailed, fmt.Errorf("%s named in spec.decryption.secretRef not found", subject))
	case err != nil:
		return nil, retry(v1.ReasonDecryptionFailed, fmt.Errorf("%s read failed: %w", subject, err))
	}
	ids, err := sops.IdentitiesFromSecret(secret.Data)
	if err != nil {
		return nil, stalled(v1.ReasonDecryptionFailed, fmt.Errorf("%s: %w", subject, err))
	}
	return ids, nil
}
