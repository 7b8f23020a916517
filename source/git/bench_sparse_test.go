package git

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gitsync.dev/gitsync/internal/gittest"
)

// Sparse checkout of a kustomize overlay in a monorepo. Run with:
//
//	go test ./source/git -run '^$' -bench BenchmarkCheckoutOverlay -benchtime 20x
//
// The repository has sparseTeams × sparseServices overlays
// (clusters/prod/teamNN/svcNNN, each naming ../../../../base/svc and a
// shared component) beside sparseFiles plain manifests under apps/. Each
// op checks out one overlay for rendering: "whole" as before (the root
// tree, what a kustomization got), "closure" the overlay and the
// directories its kustomizations name (Fetcher.Inputs, timed with it).
// files/op and bytes/op are what the checkout wrote.
const (
	sparseTeams    = 20
	sparseServices = 25
	sparseFiles    = 5000
)

func newSparseBenchRepo(b *testing.B) *gittest.Repo {
	b.Helper()
	repo := gittest.NewRepo(b, filepath.Join(b.TempDir(), "mono"))
	var stream bytes.Buffer
	file := func(path, content string) {
		fmt.Fprintf(&stream, "M 100644 inline %s\ndata %d\n%s\n", path, len(content), content)
	}
	fmt.Fprintf(&stream, "commit refs/heads/main\ncommitter t <t@example.com> 1700000000 +0000\ndata 4\ninit\n")
	file("base/svc/kustomization.yaml", "resources: [deployment.yaml]\n")
	file("base/svc/deployment.yaml", benchManifest(0, 0))
	file("components/prod/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nlabels:\n- pairs: {env: prod}\n")
	for t := range sparseTeams {
		for s := range sparseServices {
			dir := fmt.Sprintf("clusters/prod/team%02d/svc%03d", t, s)
			file(dir+"/kustomization.yaml", fmt.Sprintf("namePrefix: t%02d-s%03d-\nresources: [../../../../base/svc, cm.yaml]\ncomponents: [../../../../components/prod]\n", t, s))
			file(dir+"/cm.yaml", benchManifest(t*sparseServices+s, 1))
		}
	}
	for i := range sparseFiles {
		file(benchPath(i), benchManifest(i, 0))
	}
	repo.GitInput(stream.Bytes(), "fast-import", "--quiet")
	repo.Git("reset", "-q", "--hard", "main")
	return repo
}

func BenchmarkCheckoutOverlay(b *testing.B) {
	repo := newSparseBenchRepo(b)
	f := newTestFetcher(b)
	src := Source{URL: "file://" + repo.Dir, Ref: Ref{Branch: "main"}, Path: "clusters/prod/team07/svc013"}
	rev, err := f.Resolve(b.Context(), src)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.Fetch(b.Context(), src, rev); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"whole", "closure"} {
		b.Run(mode, func(b *testing.B) {
			var files, size int64
			for b.Loop() {
				dirs := []string{"."}
				if mode == "closure" {
					in, err := f.Inputs(src, rev.Commit)
					if err != nil {
						b.Fatal(err)
					}
					if !strings.HasPrefix(in.Key, KustomizeKeyPrefix) {
						b.Fatalf("key %s", in.Key)
					}
					dirs = in.Dirs
				}
				dir, err := f.CheckoutTrees(b.Context(), src, rev, dirs)
				if err != nil {
					b.Fatal(err)
				}
				filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						info, _ := d.Info()
						files++
						size += info.Size()
					}
					return nil
				})
				os.RemoveAll(dir)
			}
			b.ReportMetric(float64(files)/float64(b.N), "files/op")
			b.ReportMetric(float64(size)/float64(b.N), "bytes/op")
		})
	}
}
