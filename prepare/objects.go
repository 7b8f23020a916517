package prepare

import (
	"context"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/redact"
	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/sops"
	"gitsync.dev/gitsync/source/substitute"
)

// Inputs are what one sync prepares its objects with.
type Inputs struct {
	// Variables are substituted into the objects; nil substitutes nothing
	// (a GitSync without spec.substitute or spec.substituteFrom).
	Variables *substitute.Variables
	// Strict fails on a ${NAME} without a value and a default
	// (spec.substituteStrict).
	Strict bool
	// Keys returns the age identities for SOPS files; it is called only
	// when an object is encrypted.
	Keys sops.Keys
	// Redactor is told every sensitive value that enters: the values of
	// variables from Secrets and every decrypted value. Required.
	Redactor *redact.Redactor
	// Budget is charged with what substitution and decryption add, as
	// they build it (source/budget); nil means a fresh one with
	// budget.DefaultLimits.
	Budget *budget.Budget
}

// Objects turns the shared render objs into one sync's objects: variables
// substituted, then SOPS files decrypted (files finds them), so a decrypted
// value holding "${" is never expanded. objs and its objects are not
// changed; changed objects are copies. Decrypted values land only in
// Secrets (sops.Objects refuses anything else).
func Objects(objs []*unstructured.Unstructured, files sops.Files, in Inputs) ([]*unstructured.Unstructured, error) {
	if in.Budget == nil {
		in.Budget = budget.New(budget.DefaultLimits())
	}
	if in.Variables != nil {
		in.Redactor.Add(in.Variables.SensitiveValues()...)
		res, err := substitute.Objects(objs, *in.Variables, substitute.Options{Strict: in.Strict, Budget: in.Budget})
		if err != nil {
			return nil, err
		}
		objs = res.Objects
	}
	out, decrypted, err := sops.Objects(objs, files, in.Keys)
	in.Redactor.Add(decrypted...)
	if err != nil {
		return nil, err
	}
	// A plaintext is shorter than its ciphertext, which the render counted,
	// so this cannot grow past what was read; it is charged all the same, so
	// the sync's budget covers every byte its stages added.
	for _, v := range decrypted {
		if err := in.Budget.Charge(budget.StageDecrypt, int64(len(v))); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Substitutes reports whether gs substitutes variables at all.
func Substitutes(gs *v1.GitSync) bool {
	return len(gs.Spec.Substitute) > 0 || len(gs.Spec.SubstituteFrom) > 0
}

// ReadVariables returns the data of the object one spec.substituteFrom
// entry names (a Secret's values are sensitive: the reader tells them to
// the sync's redactor); a missing object is an apierrors NotFound error.
type ReadVariables func(ctx context.Context, index int, ref v1.SubstituteReference) (map[string]string, error)

// Variables reads gs's variables: spec.substituteFrom in order (a later
// object wins; keys that are not variable names are skipped), then
// spec.substitute over all. Values from Secrets are sensitive. A missing
// object that is not optional is a *MissingError; a key of spec.substitute
// that is not a variable name a *SpecError; a failed read a *ReadError.
func Variables(ctx context.Context, gs *v1.GitSync, read ReadVariables) (*substitute.Variables, error) {
	if !Substitutes(gs) {
		return nil, nil
	}
	vars := &substitute.Variables{}
	for i, ref := range gs.Spec.SubstituteFrom {
		data, err := read(ctx, i, ref)
		subject := fmt.Sprintf("%s/%s/%s", ref.Kind, gs.Namespace, ref.Name)
		field := fmt.Sprintf("spec.substituteFrom[%d]", i)
		switch {
		case apierrors.IsNotFound(err) && ref.Optional:
			continue
		case apierrors.IsNotFound(err):
			return nil, &MissingError{Subject: subject, Field: "spec.substituteFrom", Hint: "set optional: true to sync without it"}
		case err != nil:
			return nil, &ReadError{Subject: subject, Field: field, Err: err}
		}
		for _, name := range slices.Sorted(maps.Keys(data)) {
			if substitute.ValidName(name) { // other keys cannot be referenced
				vars.Set(name, data[name], ref.Kind == "Secret")
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(gs.Spec.Substitute)) {
		if !substitute.ValidName(name) {
			return nil, &SpecError{Field: "spec.substitute", Err: fmt.Errorf("key %q is not a variable name ([_a-zA-Z][_a-zA-Z0-9]*)", name)}
		}
		vars.Set(name, gs.Spec.Substitute[name], false)
	}
	return vars, nil
}

// Strict is gs's spec.substituteStrict, true when unset.
func Strict(gs *v1.GitSync) bool {
	if gs.Spec.SubstituteStrict != nil {
		return *gs.Spec.SubstituteStrict
	}
	return substitute.DefaultOptions().Strict
}
