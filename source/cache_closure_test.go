package source

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/render"
)

// TestSparseKustomizeRendersAsFullCheckout: a kustomize overlay in a
// subdirectory whose base, the base's own base and a component live
// elsewhere is checked out with those directories only (not the unrelated
// app beside them), renders with the real renderer exactly as from a full
// checkout, is not rendered again for a commit outside them, and is for a
// commit to its base's base.
//
// Checked: with Cache.load checking out "." as before, the "only the
// closure" assertion fails; with ContentKey back to the root tree for
// kustomizations, the "unrelated commit" step renders again.
func TestSparseKustomizeRendersAsFullCheckout(t *testing.T) {
	repo := gittest.NewRepo(t, filepath.Join(t.TempDir(), "mono"))
	cm := func(name, v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  v: \"" + v + "\"\n"
	}
	repo.Commit("init", map[string]string{
		"base/common/kustomization.yaml":     "resources: [cm.yaml]\n",
		"base/common/cm.yaml":                cm("common", "1"),
		"base/app/kustomization.yaml":        "resources: [cm.yaml, ../common]\n",
		"base/app/cm.yaml":                   cm("app", "1"),
		"components/team/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nlabels:\n- pairs: {team: a}\n",
		"clusters/prod/app/kustomization.yaml": "namePrefix: prod-\nresources: [../../../base/app]\n" +
			"components: [../../../components/team]\n",
		"unrelated/cm.yaml": cm("unrelated", "1"),
	})
	const path = "clusters/prod/app"
	var renders atomic.Int64
	var present []string
	f := newTestFetcher(t)
	opts := DefaultCacheOptions()
	opts.Fetcher = f
	opts.Render = func(ctx context.Context, dir, p string, _ render.Settings) (*render.Rendered, error) {
		renders.Add(1)
		present = present[:0]
		filepath.WalkDir(dir, func(f string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dir, f)
				present = append(present, filepath.ToSlash(rel))
			}
			return nil
		})
		return render.Render(ctx, dir, p, render.Options{})
	}
	c, err := NewCache(opts)
	if err != nil {
		t.Fatal(err)
	}
	src := git.Source{URL: "file://" + repo.Dir, Ref: git.Ref{Branch: "main"}, Path: path}
	full := func(t *testing.T, commit string) string {
		t.Helper()
		dir, err := f.CheckoutTree(t.Context(), src, git.Revision{Commit: commit}, ".")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		r, err := render.Render(t.Context(), dir, path, render.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Digest
	}
	get := func(t *testing.T) *Artifact {
		t.Helper()
		a, err := c.Get(t.Context(), src)
		if err != nil {
			t.Fatal(err)
		}
		if want := full(t, a.Revision.Commit); a.Rendered.Digest != want {
			t.Fatalf("sparse render digest %s, full checkout's %s", a.Rendered.Digest, want)
		}
		return a
	}

	a := get(t)
	if renders.Load() != 1 || len(a.Rendered.Objects) != 2 || a.Rendered.Objects[0].GetName() != "prod-app" ||
		a.Rendered.Objects[0].GetLabels()["team"] != "a" {
		t.Fatalf("renders %d, objects %v", renders.Load(), a.Rendered.Objects)
	}
	if got := strings.Join(present, " "); strings.Contains(got, "unrelated") || !strings.Contains(got, "base/common/cm.yaml") {
		t.Errorf("checked out %s; want only the closure (no unrelated/, with base/common/)", got)
	}

	repo.Commit("unrelated", map[string]string{"unrelated/cm.yaml": cm("unrelated", "2")})
	if b := get(t); renders.Load() != 1 || b.ContentKey != a.ContentKey {
		t.Errorf("a commit outside the closure rendered again (%d renders; key %s → %s)", renders.Load(), a.ContentKey, b.ContentKey)
	}

	repo.Commit("base of base", map[string]string{"base/common/cm.yaml": cm("common", "2")})
	b := get(t)
	if renders.Load() != 2 || b.ContentKey == a.ContentKey || b.Rendered.Digest == a.Rendered.Digest {
		t.Errorf("a commit to base/common: %d renders, key changed %v, digest changed %v; want a new render",
			renders.Load(), b.ContentKey != a.ContentKey, b.Rendered.Digest != a.Rendered.Digest)
	}
}
