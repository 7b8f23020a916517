package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/substitute"
)

// variableRefsOf returns the objects of kind (ConfigMap or Secret) that
// gs's spec.substituteFrom names, for the watches that serve them.
func variableRefsOf(gs *v1.GitSync, kind string) map[types.NamespacedName]bool {
	out := map[types.NamespacedName]bool{}
	if gs.DeletionTimestamp != nil {
		return out
	}
	for _, ref := range gs.Spec.SubstituteFrom {
		if ref.Kind == kind {
			out[types.NamespacedName{Namespace: gs.Namespace, Name: ref.Name}] = true
		}
	}
	return out
}

// configMapsOf returns the ConfigMaps gs reads through the ConfigMap watch.
func configMapsOf(gs *v1.GitSync) map[types.NamespacedName]bool {
	return variableRefsOf(gs, "ConfigMap")
}

// substitutes reports whether gs substitutes variables at all.
func substitutes(gs *v1.GitSync) bool {
	return len(gs.Spec.Substitute) > 0 || len(gs.Spec.SubstituteFrom) > 0
}

// variables reads gs's variables: spec.substituteFrom in order (a later
// object wins), then spec.substitute over all. Values from Secrets are
// sensitive. A missing object that is not optional is Stalled
// SubstitutionFailed; the watch of its name requeues gs when it appears.
func (r *GitSyncReconciler) variables(ctx context.Context, gs *v1.GitSync) (substitute.Variables, error) {
	var vars substitute.Variables
	for _, ref := range gs.Spec.SubstituteFrom {
		key := client.ObjectKey{Namespace: gs.Namespace, Name: ref.Name}
		data, err := r.variableObject(ctx, gs, ref.Kind, key)
		subject := fmt.Sprintf("%s/%s/%s", ref.Kind, key.Namespace, key.Name)
		switch {
		case apierrors.IsNotFound(err) && ref.Optional:
			continue
		case apierrors.IsNotFound(err):
			return vars, stalled(v1.ReasonSubstitutionFailed, fmt.Errorf("%s named in spec.substituteFrom not found (set optional: true to sync without it)", subject))
		case err != nil:
			return vars, retry(v1.ReasonSubstitutionFailed, fmt.Errorf("%s read failed: %w", subject, err))
		}
		for _, name := range slices.Sorted(maps.Keys(data)) {
			if substitute.ValidName(name) { // other keys cannot be referenced
				vars.Set(name, data[name], ref.Kind == "Secret")
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(gs.Spec.Substitute)) {
		if !substitute.ValidName(name) {
			return vars, stalled(v1.ReasonInvalidSpec, fmt.Errorf("spec.substitute key %q is not a variable name ([_a-zA-Z][_a-zA-Z0-9]*)", name))
		}
		vars.Set(name, gs.Spec.Substitute[name], false)
	}
	return vars, nil
}

// variableObject reads one substituteFrom object's data through the
// agent's watches.
func (r *GitSyncReconciler) variableObject(ctx context.Context, gs *v1.GitSync, kind string, key client.ObjectKey) (map[string]string, error) {
	user := client.ObjectKeyFromObject(gs)
	if kind == "Secret" {
		s := &corev1.Secret{}
		if err := (secretReader{w: r.secrets, user: user}).Get(ctx, key, s); err != nil {
			return nil, err
		}
		out := make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			out[k] = string(v)
		}
		return out, nil
	}
	cm := &corev1.ConfigMap{}
	if err := (secretReader{w: r.configMaps, user: user}).Get(ctx, key, cm); err != nil {
		return nil, err
	}
	return cm.Data, nil
}

// substitute replaces gs's variables in objs (copies; objs may be the
// render cache's) and returns the values that must not be shown.
func (r *GitSyncReconciler) substitute(ctx context.Context, gs *v1.GitSync, objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, []string, error) {
	if !substitutes(gs) {
		return objs, nil, nil
	}
	vars, err := r.variables(ctx, gs)
	if err != nil {
		return nil, nil, err
	}
	opts := substitute.DefaultOptions()
	if gs.Spec.SubstituteStrict != nil {
		opts.Strict = *gs.Spec.SubstituteStrict
	}
	res, err := substitute.Objects(objs, vars, opts)
	if err != nil {
		var ue *substitute.UndefinedError
		var de *substitute.DuplicateError
		if errors.As(err, &ue) || errors.As(err, &de) {
			return nil, nil, stalled(v1.ReasonSubstitutionFailed, err)
		}
		return nil, nil, retry(v1.ReasonSubstitutionFailed, err)
	}
	return res.Objects, vars.SensitiveValues(), nil
}
