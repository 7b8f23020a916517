package sandbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/postrender"
	"gitsync.dev/gitsync/source/render"
)

// TestPostRenderRunsInAChild: a plain path with post-render changes (tenant
// input, like a template) renders in a child, to what render.Render gives
// in-process; its errors keep their class and field on the way back.
//
// Checked by dropping the post-render case from render's PlainOnly refusal:
// no child starts.
func TestPostRenderRunsInAChild(t *testing.T) {
	repo := writeRepo(t, map[string]string{
		"plain/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  v: x\n",
	})
	p := newPIDs()
	s := newSandbox(t, budget.Limits{}, 1, p)
	opts := render.DefaultOptions()
	opts.Settings.PostRender = postrender.Options{Labels: map[string]string{"team": "a"}, Patches: []postrender.Patch{{
		Target: &postrender.Selector{Kind: "ConfigMap"}, Patch: `[{"op":"add","path":"/data/n","value":"1"}]`}}}
	want, err := render.Render(context.Background(), repo, "plain", opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Render(context.Background(), repo, "plain", opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sandboxed render (-in-process +sandboxed):\n%s", diff)
	}
	if got.Objects[0].GetLabels()["team"] != "a" {
		t.Errorf("labels %v", got.Objects[0].GetLabels())
	}
	if n := len(p.all()); n != 1 {
		t.Errorf("%d children started, want 1", n)
	}

	opts.Settings.PostRender.Patches[0].Target.Name = "b"
	_, err = s.Render(context.Background(), repo, "plain", opts)
	var re *render.Error
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "spec.patches[0]: its target kind=ConfigMap,name=b matches no rendered object") {
		t.Errorf("error %v, want the patch named in a *render.Error", err)
	}
}
