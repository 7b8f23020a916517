package sandbox_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/render"
)

// TestRenderFSIsPlainRender: the sandbox renders a plain tree held in
// memory as Render renders its checkout, in-process and under the same
// budget (a plain render over the output budget is refused the same way),
// and hands a kustomization back as render.ErrNeedsEngine without starting
// a child. Checked by leaving RenderFS's budget unset: the over-budget
// render then succeeds.
func TestRenderFSIsPlainRender(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  v: " + strings.Repeat("x", 4000) + "\n"
	repo := writeRepo(t, map[string]string{"plain/cm.yaml": cm, "app/kustomization.yaml": "resources: [cm.yaml]\n", "app/cm.yaml": cm})
	p := newPIDs()
	s := newSandbox(t, budget.Limits{}, 1, p)
	fsys := os.DirFS(repo) // no symlinks in it
	want, err := s.Render(context.Background(), repo, "plain", render.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.RenderFS(context.Background(), fsys, "plain", render.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-Render +RenderFS):\n%s", diff)
	}
	if _, err := s.RenderFS(context.Background(), fsys, "app", render.DefaultOptions()); !errors.Is(err, render.ErrNeedsEngine) {
		t.Errorf("kustomization: %v, want ErrNeedsEngine", err)
	}
	if n := len(p.all()); n != 0 {
		t.Errorf("%d children started, want none", n)
	}

	small := newSandbox(t, budget.Limits{OutputBytes: 1000}, 1, nil)
	_, want2 := small.Render(context.Background(), repo, "plain", render.DefaultOptions())
	_, got2 := small.RenderFS(context.Background(), fsys, "plain", render.DefaultOptions())
	requireOver(t, want2, budget.Output)
	requireOver(t, got2, budget.Output)
}
