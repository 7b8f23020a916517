package controller

import (
	"encoding/json"
	"fmt"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/ignore"
	"gitsync.dev/gitsync/source/render"
)

// RenderSettings are gs's own render choices: spec.ignore, and spec.helm for
// a chart path, with the release defaults the API documents (release name:
// the GitSync's name; namespace: spec.targetNamespace, else the GitSync's).
// The agent and `gitsync diff --gitsync` both use it, so a preview renders
// what the agent will. A spec.helm.values that is not a JSON object is an
// InvalidSpec error.
func RenderSettings(gs *v1.GitSync) (render.Settings, error) {
	h := helm.DefaultOptions()
	h.ReleaseName = gs.Name
	h.Namespace = gs.Namespace
	if gs.Spec.TargetNamespace != "" {
		h.Namespace = gs.Spec.TargetNamespace
	}
	if spec := gs.Spec.Helm; spec != nil {
		if spec.ReleaseName != "" {
			h.ReleaseName = spec.ReleaseName
		}
		if spec.Namespace != "" {
			h.Namespace = spec.Namespace
		}
		h.ValuesFiles = spec.ValuesFiles
		if spec.IncludeCRDs != nil {
			h.IncludeCRDs = *spec.IncludeCRDs
		}
		if spec.Values != nil && len(spec.Values.Raw) > 0 {
			if err := json.Unmarshal(spec.Values.Raw, &h.Values); err != nil {
				return render.Settings{}, stalled(v1.ReasonInvalidSpec, fmt.Errorf("spec.helm.values is not a JSON object: %w", err))
			}
		}
	}
	return render.Settings{Helm: &h, Ignore: ignore.Options{Extra: gs.Spec.Ignore}}, nil
}
