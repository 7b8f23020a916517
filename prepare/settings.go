package prepare

import (
	"encoding/json"
	"fmt"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/ignore"
	"gitsync.dev/gitsync/source/postrender"
	"gitsync.dev/gitsync/source/render"
)

// Settings are gs's own render choices: spec.ignore, the post-render
// changes (PostRender), and spec.helm for a chart path, with the release defaults the API documents (release name:
// the GitSync's name; namespace: spec.targetNamespace, else the GitSync's).
// A spec.helm.values that is not a JSON object is a *SpecError.
func Settings(gs *v1.GitSync) (render.Settings, error) {
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
				return render.Settings{}, &SpecError{Field: "spec.helm.values", Err: fmt.Errorf("not a JSON object: %w", err)}
			}
		}
	}
	return render.Settings{Helm: &h, Ignore: ignore.Options{Extra: gs.Spec.Ignore}, PostRender: PostRender(gs)}, nil
}

// PostRender is gs's spec.patches, spec.images and spec.commonMetadata as
// the render runs them (package postrender). They are part of the render's
// settings, so the render cache keys by them: a GitSync without any shares
// its path's render with every other such GitSync.
func PostRender(gs *v1.GitSync) postrender.Options {
	var o postrender.Options
	for _, p := range gs.Spec.Patches {
		rp := postrender.Patch{Patch: p.Patch, Optional: p.Optional}
		if t := p.Target; t != nil {
			rp.Target = &postrender.Selector{Group: t.Group, Version: t.Version, Kind: t.Kind, Name: t.Name,
				Namespace: t.Namespace, LabelSelector: t.LabelSelector, AnnotationSelector: t.AnnotationSelector}
		}
		o.Patches = append(o.Patches, rp)
	}
	for _, i := range gs.Spec.Images {
		o.Images = append(o.Images, postrender.Image{Name: i.Name, NewName: i.NewName, NewTag: i.NewTag, Digest: i.Digest})
	}
	if m := gs.Spec.CommonMetadata; m != nil {
		o.Labels, o.Annotations = m.Labels, m.Annotations
	}
	return o
}

// MaxObjects is gs's object cap: spec.maxObjects when set, else the
// operator's cap. A GitSync may only lower the operator's cap: the shared
// render cache renders every revision under it, which is what bounds the
// agent's memory; a higher spec.maxObjects is a *SpecError.
func MaxObjects(gs *v1.GitSync, operatorCap int) (int, error) {
	if gs.Spec.MaxObjects == nil {
		return operatorCap, nil
	}
	n := int(*gs.Spec.MaxObjects)
	if n < 1 || n > operatorCap {
		return 0, &SpecError{Field: "spec.maxObjects", Err: fmt.Errorf(
			"%d is above the agent's cap of %d objects per revision (gitsync run --max-objects); it may only lower it", n, operatorCap)}
	}
	return n, nil
}
