package postrender

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/hasher"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"gitsync.dev/gitsync/source/budget"
)

// imageVolumeFields are where kustomize's default configuration finds
// images outside containers (image volumes); containers and initContainers
// anywhere in an object (every workload kind, CronJobs, custom resources)
// are found by its ImageTagTransformer's own walk.
var imageVolumeFields = []types.FieldSpec{
	{Path: "spec/volumes[]/image/reference"},
	{Path: "spec/template/spec/volumes[]/image/reference"},
	{Path: "spec/jobTemplate/spec/template/spec/volumes[]/image/reference"},
}

// Apply returns objs with o's changes made: patches in order, then the
// common labels and annotations, then the images, as a kustomization
// orders its transformers. objs is not changed; with no changes it is
// returned as is. The output's JSON is charged to b (StagePostRender) as
// it is encoded, past the size of objs, which the render charged. A
// change that fails, or a target that matches nothing, is an *Error (or a
// *budget.ExceededError); no objects are returned then.
//
// Apply uses kustomize's process-wide OpenAPI schema: callers serialise it
// with their kustomize builds.
func Apply(objs []*unstructured.Unstructured, o Options, b *budget.Budget) (out []*unstructured.Unstructured, err error) {
	if o.IsZero() {
		return objs, nil
	}
	defer func() {
		if r := recover(); r != nil {
			// The panic value is not quoted: it may hold object content.
			out, err = nil, &Error{Field: "spec", Detail: "kustomize panicked on these post-render changes"}
		}
	}()
	rf := resource.NewFactory(&hasher.Hasher{})
	h := resmap.NewPluginHelpers(nil, nil, resmap.NewFactory(rf), types.DisabledPluginConfig())
	m := resmap.New()
	var rendered int64 // the objects' JSON, which the render charged already
	for _, obj := range objs {
		raw, err := json.Marshal(obj.Object)
		if err != nil {
			return nil, fmt.Errorf("post-render: %s/%s encode failed: %w", obj.GetKind(), obj.GetName(), err)
		}
		rendered += int64(len(raw))
		r, err := rf.FromMap(obj.Object)
		if err == nil {
			err = m.Append(r)
		}
		if err != nil {
			return nil, fmt.Errorf("post-render: %s/%s cannot be read by kustomize: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	for i, p := range o.Patches {
		if err := applyPatch(h, m, i, p, b); err != nil {
			return nil, err
		}
	}
	if err := applyMetadata(m, o); err != nil {
		return nil, err
	}
	hasSecret := anySecret(m.Resources())
	for i, img := range o.Images {
		t := &builtins.ImageTagTransformerPlugin{ImageTag: img.kustomize(), FieldSpecs: imageVolumeFields}
		if err := t.Transform(m); err != nil {
			return nil, &Error{Field: imageField(i), Detail: "could not be applied", Err: quotable(hasSecret, err)}
		}
	}
	return encode(m, b, rendered)
}

// applyPatch makes spec.patches[i].
func applyPatch(h *resmap.PluginHelpers, m resmap.ResMap, i int, p Patch, b *budget.Budget) error {
	field := patchField(i)
	if err := checkAliases(p.Patch); err != nil {
		err.(*Error).Field = field
		return err
	}
	selected, err := targets(h, m, p)
	if err != nil {
		var e *Error
		if asError(err, &e) {
			e.Field = field
			return e
		}
		return &Error{Field: field, Detail: "is not a strategic-merge patch (an object) nor a JSON 6902 patch (a list of operations)", Err: err}
	}
	if len(selected) == 0 {
		if p.Optional {
			return nil
		}
		return &Error{Field: field, Detail: fmt.Sprintf("%s matches no rendered object (set optional: true if that may be so)", describeTarget(p))}
	}
	cfg := struct {
		Patch  string          `json:"patch"`
		Target *types.Selector `json:"target,omitempty"`
	}{Patch: p.Patch}
	if p.Target != nil {
		s := p.Target.kustomize()
		cfg.Target = &s
	}
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		return &Error{Field: field, Detail: "cannot be encoded", Err: err}
	}
	t := &builtins.PatchTransformerPlugin{}
	if err := t.Config(h, raw); err != nil {
		return &Error{Field: field, Detail: "is not a strategic-merge patch (an object) nor a JSON 6902 patch (a list of operations)", Err: err}
	}
	if err := checkGrowth(p.Patch, selected, b); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	// Named before the transform: a failed filter leaves its object empty.
	what, hasSecret := describe(selected), anySecret(selected)
	if err := t.Transform(m); err != nil {
		if hasSecret {
			err = withheld{}
		}
		return &Error{Field: field, Detail: "could not be applied to " + what, Err: err}
	}
	return nil
}

// targets returns the objects p changes: those its Target selects, or, for
// a strategic-merge patch without one, the objects its documents name.
// Empty means the patch would change nothing.
func targets(h *resmap.PluginHelpers, m resmap.ResMap, p Patch) ([]*resource.Resource, error) {
	json6902, err := isJSON6902(p.Patch)
	if err != nil {
		return nil, err
	}
	if p.Target != nil {
		selected, err := m.Select(p.Target.kustomize())
		if err != nil {
			return nil, &Error{Detail: fmt.Sprintf("target %s is not a valid selector", p.Target), Err: err}
		}
		return selected, nil
	}
	if json6902 {
		return nil, &Error{Detail: "a JSON 6902 patch needs a target"}
	}
	docs, err := h.ResmapFactory().RF().SliceFromBytes([]byte(p.Patch))
	if err != nil {
		return nil, err
	}
	var selected []*resource.Resource
	for _, d := range docs {
		r, err := m.GetById(d.OrgId())
		if err != nil {
			return nil, nil // named object missing: matches nothing
		}
		selected = append(selected, r)
	}
	return selected, nil
}

// isJSON6902 tells a list of operations from an object, as kustomize does.
func isJSON6902(patch string) (bool, error) {
	s := strings.TrimSpace(patch)
	if s == "" {
		return false, fmt.Errorf("the patch is empty")
	}
	if s[0] == '[' {
		return true, nil
	}
	j, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		return false, err
	}
	return len(j) > 0 && j[0] == '[', nil
}

// applyMetadata sets the common labels and annotations on each object's
// own metadata only: kustomize's transformers with one field each.
func applyMetadata(m resmap.ResMap, o Options) error {
	labels := &builtins.LabelTransformerPlugin{Labels: o.Labels,
		FieldSpecs: []types.FieldSpec{{Path: "metadata/labels", CreateIfNotPresent: true}}}
	annotations := &builtins.AnnotationsTransformerPlugin{Annotations: o.Annotations,
		FieldSpecs: []types.FieldSpec{{Path: "metadata/annotations", CreateIfNotPresent: true}}}
	hasSecret := anySecret(m.Resources())
	for _, t := range []resmap.Transformer{labels, annotations} {
		if err := t.Transform(m); err != nil {
			return &Error{Field: "spec.commonMetadata", Detail: "could not be applied", Err: quotable(hasSecret, err)}
		}
	}
	return nil
}

// encode turns m back into objects. Their JSON is charged to b as it is
// encoded, beyond the rendered bytes the render charged already: the
// budget counts what the render yields, and a change that adds a label
// costs its label, not a second copy of every object. JSON numbers decode
// as int64 or float64, as the render's own objects do.
func encode(m resmap.ResMap, b *budget.Budget, rendered int64) ([]*unstructured.Unstructured, error) {
	m.RemoveBuildAnnotations()
	out := make([]*unstructured.Unstructured, 0, m.Size())
	var total int64
	for _, r := range m.Resources() {
		if r.IsNilOrEmpty() {
			continue // deleted by a strategic-merge patch's $patch: delete
		}
		raw, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("post-render: %s encode failed: %w", r.CurId(), err)
		}
		before := total
		total += int64(len(raw))
		if err := b.Charge(budget.StagePostRender, total-max(before, rendered)); err != nil {
			return nil, err
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("post-render: %s decode failed: %w", r.CurId(), err)
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
	return out, nil
}

// anySecret reports whether any of rs is a Secret, whose data kustomize's
// messages about it may quote.
func anySecret(rs []*resource.Resource) bool {
	for _, r := range rs {
		if r.GetKind() == "Secret" {
			return true
		}
	}
	return false
}

// quotable returns err, or a stand-in when the objects it is about
// include a Secret.
func quotable(secret bool, err error) error {
	if secret {
		return withheld{}
	}
	return err
}

// describe names the objects a patch selected, e.g. "Deployment/web", or
// "3 objects".
func describe(rs []*resource.Resource) string {
	if len(rs) == 1 {
		return rs[0].GetKind() + "/" + rs[0].GetName()
	}
	return fmt.Sprintf("%d objects", len(rs))
}

func describeTarget(p Patch) string {
	if p.Target != nil {
		return "its target " + p.Target.String()
	}
	return "the object it names (apiVersion, kind, metadata.name and metadata.namespace)"
}
