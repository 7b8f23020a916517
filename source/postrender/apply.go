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
	var chunks []resmap.ResMap
	var rendered int64 // the objects' JSON, which the render charged already
	for i, obj := range objs {
		raw, err := json.Marshal(obj.Object)
		if err != nil {
			return nil, fmt.Errorf("post-render: %s/%s encode failed: %w", obj.GetKind(), obj.GetName(), err)
		}
		rendered += int64(len(raw))
		if i%chunkSize == 0 {
			chunks = append(chunks, resmap.New())
		}
		r, err := rf.FromMap(obj.Object)
		if err == nil {
			err = chunks[len(chunks)-1].Append(r)
		}
		if err != nil {
			return nil, fmt.Errorf("post-render: %s/%s cannot be read by kustomize: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	for i, p := range o.Patches {
		if err := applyPatch(h, chunks, i, p, b); err != nil {
			return nil, err
		}
	}
	hasSecret := false
	for _, m := range chunks {
		hasSecret = hasSecret || anySecret(m.Resources())
	}
	for _, m := range chunks {
		if err := applyMetadata(m, o, hasSecret); err != nil {
			return nil, err
		}
		for i, img := range o.Images {
			t := &builtins.ImageTagTransformerPlugin{ImageTag: img.kustomize(), FieldSpecs: imageVolumeFields}
			if err := t.Transform(m); err != nil {
				return nil, &Error{Field: imageField(i), Detail: "could not be applied", Err: quotable(hasSecret, err)}
			}
		}
	}
	return encode(chunks, b, rendered)
}

// chunkSize is how many objects one resource map holds. kustomize's
// ResMap.Append compares a new resource with every one it holds, so one
// map of n objects costs n² ID comparisons; every change but a
// strategic-merge patch without target works per object, and the
// render's IDs are unique already, so maps of a few hundred keep it
// linear.
const chunkSize = 256

// step is one patch's transform of one chunk: the patch text to run there
// and the objects of the chunk it changes.
type step struct {
	m        resmap.ResMap
	patch    string
	selected []*resource.Resource
}

// applyPatch makes spec.patches[i].
func applyPatch(h *resmap.PluginHelpers, chunks []resmap.ResMap, i int, p Patch, b *budget.Budget) error {
	field := patchField(i)
	if err := checkAliases(p.Patch); err != nil {
		err.(*Error).Field = field
		return err
	}
	steps, err := plan(h, chunks, p)
	if err != nil {
		var e *Error
		if asError(err, &e) {
			e.Field = field
			return e
		}
		return &Error{Field: field, Detail: "is not a strategic-merge patch (an object) nor a JSON 6902 patch (a list of operations)", Err: err}
	}
	var selected []*resource.Resource
	for _, s := range steps {
		selected = append(selected, s.selected...)
	}
	if len(selected) == 0 {
		if p.Optional {
			return nil
		}
		return &Error{Field: field, Detail: fmt.Sprintf("%s matches no rendered object (set optional: true if that may be so)", describeTarget(p))}
	}
	if err := checkGrowth(p.Patch, selected, b); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	// Named before the transform: a failed filter leaves its object empty.
	what, hasSecret := describe(selected), anySecret(selected)
	for _, s := range steps {
		t, err := configure(h, s.patch, p.Target)
		if err != nil {
			return &Error{Field: field, Detail: "is not a strategic-merge patch (an object) nor a JSON 6902 patch (a list of operations)", Err: err}
		}
		if err := t.Transform(s.m); err != nil {
			if hasSecret {
				err = withheld{}
			}
			return &Error{Field: field, Detail: "could not be applied to " + what, Err: err}
		}
	}
	return nil
}

// configure is kustomize's PatchTransformer for patch and target.
func configure(h *resmap.PluginHelpers, patch string, target *Selector) (resmap.Transformer, error) {
	cfg := struct {
		Patch  string          `json:"patch"`
		Target *types.Selector `json:"target,omitempty"`
	}{Patch: patch}
	if target != nil {
		s := target.kustomize()
		cfg.Target = &s
	}
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	t := &builtins.PatchTransformerPlugin{}
	if err := t.Config(h, raw); err != nil {
		return nil, err
	}
	return t, nil
}

// plan returns the steps of p: in each chunk, the objects its Target
// selects; for a strategic-merge patch without one, each document in the
// chunk of the object it names. No steps means the patch would change
// nothing (an object a document names is missing).
func plan(h *resmap.PluginHelpers, chunks []resmap.ResMap, p Patch) ([]step, error) {
	json6902, err := isJSON6902(p.Patch)
	if err != nil {
		return nil, err
	}
	var steps []step
	if p.Target != nil {
		for _, m := range chunks {
			selected, err := m.Select(p.Target.kustomize())
			if err != nil {
				return nil, &Error{Detail: fmt.Sprintf("target %s is not a valid selector", p.Target), Err: err}
			}
			if len(selected) > 0 {
				steps = append(steps, step{m: m, patch: p.Patch, selected: selected})
			}
		}
		return steps, nil
	}
	if json6902 {
		return nil, &Error{Detail: "a JSON 6902 patch needs a target"}
	}
	docs, err := h.ResmapFactory().RF().SliceFromBytes([]byte(p.Patch))
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		text := p.Patch
		if len(docs) > 1 { // each document goes to its own object's chunk
			y, err := d.AsYAML()
			if err != nil {
				return nil, err
			}
			text = string(y)
		}
		found := false
		for _, m := range chunks {
			if r, err := m.GetById(d.OrgId()); err == nil {
				steps, found = append(steps, step{m: m, patch: text, selected: []*resource.Resource{r}}), true
				break
			}
		}
		if !found {
			return nil, nil // named object missing: matches nothing
		}
	}
	return steps, nil
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
func applyMetadata(m resmap.ResMap, o Options, hasSecret bool) error {
	labels := &builtins.LabelTransformerPlugin{Labels: o.Labels,
		FieldSpecs: []types.FieldSpec{{Path: "metadata/labels", CreateIfNotPresent: true}}}
	annotations := &builtins.AnnotationsTransformerPlugin{Annotations: o.Annotations,
		FieldSpecs: []types.FieldSpec{{Path: "metadata/annotations", CreateIfNotPresent: true}}}
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
func encode(chunks []resmap.ResMap, b *budget.Budget, rendered int64) ([]*unstructured.Unstructured, error) {
	var all []*resource.Resource
	for _, m := range chunks {
		m.RemoveBuildAnnotations()
		all = append(all, m.Resources()...)
	}
	out := make([]*unstructured.Unstructured, 0, len(all))
	var total int64
	for _, r := range all {
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
