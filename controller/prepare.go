package controller

import (
	"context"
	"errors"
	"fmt"

	"filippo.io/age"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/prepare"
	"gitsync.dev/gitsync/redact"
	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/sops"
	"gitsync.dev/gitsync/source/substitute"
	"gitsync.dev/gitsync/tenant"
)

// prepare turns the shared render into gs's own objects (package prepare:
// variables substituted, then SOPS files decrypted into Secrets only),
// reading what spec.substituteFrom and spec.decryption name through view,
// the tenant boundary, which tells red every Secret value read.
func (r *GitSyncReconciler) prepare(ctx context.Context, gs *v1.GitSync, view *tenant.View, red *redact.Redactor, objs []*unstructured.Unstructured, files sops.Files) ([]*unstructured.Unstructured, error) {
	vars, err := prepare.Variables(ctx, gs, func(ctx context.Context, i int, ref v1.SubstituteReference) (map[string]string, error) {
		return variableData(ctx, view, i, ref)
	})
	if err != nil {
		return nil, classifyPrepare(err, v1.ReasonSubstitutionFailed)
	}
	keys := func() ([]age.Identity, error) {
		if gs.Spec.Decryption == nil {
			return nil, errors.New("set spec.decryption to decrypt it; it is never applied encrypted")
		}
		return decryptionKeys(ctx, gs, view)
	}
	out, err := prepare.Objects(objs, files, prepare.Inputs{Variables: vars, Strict: prepare.Strict(gs), Keys: keys, Redactor: red,
		Budget: budget.New(r.opts.Budget)}) // what both stages may add to this sync
	var ue *substitute.UndefinedError
	var de *substitute.DuplicateError
	var oe *sops.ObjectError
	var se *syncError
	var be *budget.ExceededError
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &se):
		return nil, err // a key read failed: classified there
	case errors.As(err, &ue), errors.As(err, &de), errors.As(err, &be) && be.Stage == budget.StageSubstitute:
		return nil, stalled(v1.ReasonSubstitutionFailed, err)
	case errors.As(err, &oe), errors.As(err, &be):
		return nil, stalled(v1.ReasonDecryptionFailed, err)
	}
	return nil, retry(v1.ReasonSubstitutionFailed, err)
}

// variableData reads the object one spec.substituteFrom entry names.
func variableData(ctx context.Context, view *tenant.View, i int, ref v1.SubstituteReference) (map[string]string, error) {
	tref := tenant.Ref{Name: ref.Name, Field: fmt.Sprintf("spec.substituteFrom[%d]", i)}
	if ref.Kind == tenant.KindSecret {
		s, err := view.Secret(ctx, tref)
		if err != nil {
			return nil, err
		}
		out := make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			out[k] = string(v)
		}
		return out, nil
	}
	cm, err := view.ConfigMap(ctx, tref)
	if err != nil {
		return nil, err
	}
	return cm.Data, nil
}

// decryptionKeys reads the age identities of gs's spec.decryption Secret.
// A failure is Stalled DecryptionFailed (a missing or malformed Secret),
// Forbidden (the account may not read it) or retried (a failed read).
func decryptionKeys(ctx context.Context, gs *v1.GitSync, view *tenant.View) ([]age.Identity, error) {
	name := gs.Spec.Decryption.SecretRef.Name
	subject := fmt.Sprintf("Secret/%s/%s", gs.Namespace, name)
	secret, err := view.Secret(ctx, tenant.Ref{Name: name, Field: "spec.decryption.secretRef"})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%s named in spec.decryption.secretRef not found", subject)
	case err != nil:
		return nil, classifyRead(fmt.Errorf("%s read failed: %w", subject, err), v1.ReasonDecryptionFailed)
	}
	ids, err := sops.IdentitiesFromSecret(secret.Data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", subject, err)
	}
	return ids, nil
}

// classifyPrepare sorts a failure of package prepare's spec reading.
func classifyPrepare(err error, reason string) error {
	var spec *prepare.SpecError
	var missing *prepare.MissingError
	switch {
	case errors.As(err, &spec):
		return stalled(v1.ReasonInvalidSpec, err)
	case errors.As(err, &missing):
		return stalled(reason, err)
	}
	return classifyRead(err, reason)
}

// classifyRead sorts a failed read of an object a GitSync names: a refusal
// of its account is Stalled Forbidden (the answer is asked again once RBAC,
// the object or an interval changed), anything else is retried.
func classifyRead(err error, reason string) error {
	var fe *tenant.ForbiddenError
	if errors.As(err, &fe) {
		return stalled(v1.ReasonForbidden, err)
	}
	return retry(reason, err)
}

// scrub masks every sensitive value of the sync in out's error, keeping its
// classification: conditions, Events, the log line and commit statuses are
// made from it.
func scrub(red *redact.Redactor, out *outcome) {
	if red.Len() == 0 {
		return
	}
	out.drift = red.String(out.drift)
	if out.err == nil {
		return
	}
	masked := red.String(out.err.Error())
	if masked == out.err.Error() {
		return
	}
	se := asSyncError(out.err, v1.ReasonApplyFailed)
	out.err = &syncError{Reason: se.Reason, Stalled: se.Stalled, Err: red.Error(se.Err)}
}
