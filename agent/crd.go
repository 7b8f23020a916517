package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
)

// InstallCRD server-side applies the embedded GitSync CRD (field manager
// gitsync, taking its fields over) and waits until it is Established, at
// most a minute. Options.InstallCRDs does it before the agent starts; New then
// waits until discovery serves the kind. A CRD that is Established and
// carries this definition's digest (v1alpha1.AnnotationCRDDigest) is left
// as it is: a restart reads it once and writes nothing.
func InstallCRD(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) error {
	crd, err := gitsyncv1.CRD()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	crd.TypeMeta = metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: u}
	delete(obj.Object, "status")
	digest, err := crdDigest(obj)
	if err != nil {
		return err
	}
	live := &apiextensionsv1.CustomResourceDefinition{}
	err = c.Get(ctx, client.ObjectKey{Name: crd.Name}, live)
	if err == nil && live.Annotations[gitsyncv1.AnnotationCRDDigest] == digest && established(live) {
		return nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("CustomResourceDefinition/%s read failed: %w", crd.Name, err)
	}
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[gitsyncv1.AnnotationCRDDigest] = digest
	obj.SetAnnotations(annotations)
	if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner("gitsync"), client.ForceOwnership); err != nil {
		return fmt.Errorf("CustomResourceDefinition/%s apply failed: %w", crd.Name, err)
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
			return false, err
		}
		return established(got), nil
	})
}

// crdDigest is the SHA-256 of the definition as it is applied, before the
// digest is added to it.
func crdDigest(obj *unstructured.Unstructured) (string, error) {
	data, err := json.Marshal(obj.Object) // maps marshal with sorted keys
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
